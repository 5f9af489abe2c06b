"""Parameter identification from recorded runs (Gautier and Khalil; Swevers et al. for excitation).

data.py holds what a recorded run gives the identification: the actuated joints' measured positions and
forces on the drives' time stamps (``MeasuredRun``).
"""

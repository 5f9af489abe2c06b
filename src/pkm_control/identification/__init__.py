"""Parameter identification from recorded runs (Gautier and Khalil; Swevers et al. for excitation).

data.py holds what a recorded run gives the identification: the actuated joints' measured positions and
forces on the drives' time stamps (``MeasuredRun``). excitation.py designs the motion to record: a finite Fourier
series per task coordinate optimized for the condition number of the stacked base regressor, inside every limit
(``design_excitation``, ``pkm excite``).
"""

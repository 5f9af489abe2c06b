"""Control laws, computed-force feedforward, state estimator, force limits, watchdog and safe behaviours (ROS-free).

Everything works on numpy arrays in the model's actuated-joint order; see docs/architecture.md
("Control stack").
"""

from .cycle import ControlCycle, CycleResult
from .estimator import StateEstimate, StateEstimator
from .feedforward import (MODELS, FeedforwardModel, ParameterSet, load_parameter_set, parameter_set_from_dict,
                          task_rates)
from .laws import LAWS, ComputedTorque, DecentralizedPD, PDFeedforward, make_law
from .safety import ForceLimits, HoldTarget, SafeBehaviour, Watchdog

__all__ = ["ComputedTorque", "ControlCycle", "CycleResult", "DecentralizedPD", "FeedforwardModel", "ForceLimits",
           "HoldTarget", "LAWS", "MODELS", "PDFeedforward", "ParameterSet", "SafeBehaviour", "StateEstimate",
           "StateEstimator", "Watchdog", "load_parameter_set", "make_law", "parameter_set_from_dict", "task_rates"]

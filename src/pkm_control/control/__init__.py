"""Control (ROS-free): laws, computed-force feedforward, the controller core, the state estimator and the loop.

laws.py        control laws (joint and task space, the motion-control family); each declares what it requires
force.py       force and interaction control: stiffness, direct force, impedance, admittance; wrench, force reference
feedforward.py the computed-force model (tau of a platform motion) with its parameter sets
safety.py      force limits, reference limits, safe behaviours
estimator.py   the state estimator: platform pose and twist from the measured actuated joints
controller.py  the controller: update(t, measured, references, feedforward) -> command, with its state
loop.py        one period of the real-time path: read -> estimate -> update -> write
cycle.py       Abdellatif's control cycle on the core (trajectory sample + IK + model + law), timed by the demo

Everything works on numpy arrays in the model's actuated-joint order; see docs/architecture.md.
"""

from .controller import CONTROL, Command, Controller, References
from .cycle import ControlCycle, CycleResult
from .estimator import StateEstimate, StateEstimator
from .feedforward import (MODELS, FeedforwardModel, ParameterSet, load_parameter_set, parameter_set_from_dict,
                          task_rates)
from .laws import (DESIRED_POSE, FEEDFORWARD, LAWS, MEASURED_POSE, ComputedTorque, DecentralizedPD, PDFeedforward,
                   make_law)
from .loop import ControlLoop
from .safety import ForceLimits, HoldTarget, ReferenceLimits, SafeBehaviour

__all__ = ["CONTROL", "Command", "ComputedTorque", "ControlCycle", "ControlLoop", "Controller", "CycleResult",
           "DESIRED_POSE", "DecentralizedPD", "FEEDFORWARD", "FeedforwardModel", "ForceLimits", "HoldTarget", "LAWS",
           "MEASURED_POSE", "MODELS", "PDFeedforward", "ParameterSet", "ReferenceLimits", "References", "SafeBehaviour",
           "StateEstimate", "StateEstimator", "load_parameter_set", "make_law", "parameter_set_from_dict", "task_rates"]

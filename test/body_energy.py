"""Independent kinetic energy for the dynamics tests: body by body from pinocchio link velocities."""

import numpy as np
import pinocchio as pin


def kinetic_energy_bodies(kin, pose, twist):
    """sum over every body of 1/2 m v_c^2 + 1/2 w^T I_c w, link velocities from pinocchio at the IK state."""
    model = kin.model.model
    data = model.createData()
    m = kin.inverse(pose, twist, check_limits=False)
    pin.forwardKinematics(model, data, m.q, m.v)
    T = 0.0
    for j in range(1, model.njoints):
        I, v = model.inertias[j], data.v[j]
        vc = v.linear + np.cross(v.angular, I.lever)
        T += 0.5 * I.mass * vc @ vc + 0.5 * v.angular @ I.inertia @ v.angular
    return T

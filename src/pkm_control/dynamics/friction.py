"""Joint friction, active and passive, in parameter-linear form.

Q_f = r1 sign(qdot) + r2 qdot per joint (Abdellatif eq. 32), the force an
actuator must supply on top of the rigid-body dynamics. Roles in the config
(``friction: {role: {coulomb: .., viscous: ..}}``) match tree joints by name:
``leg<i>_<role>``, or ``<role>`` with the joint's index digits removed
(``slider2`` -> ``slider``, ``link1_beta`` -> ``link_beta``). The reserved role
``cut_joints`` is the friction of the joints cut by the point closures: an
isotropic torque r1 w/|w| + r2 w on the relative angular velocity w of the two
frames (a spherical joint; a revolute for planar closures). A scalar value is one
parameter shared by all its joints, a list one parameter per joint (model order).
An omitted key is not modelled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..description.loader import ClosedLoopModel
from ..errors import InvalidModelError
from .kernels import friction_torque

_LEG = re.compile(r"^leg\d+_(.+)$")
_INDEX = re.compile(r"(?<=[A-Za-z])\d+(?=_|$)")


def joint_role(name: str) -> str:
    """Friction role of a tree joint name (see module docstring)."""
    m = _LEG.match(name)
    return m.group(1) if m else _INDEX.sub("", name, count=1)


@dataclass(frozen=True)
class FrictionParameter:
    name: str                  # friction.<role>.<coulomb|viscous>[.<joint or closure>]
    kind: str                  # coulomb | viscous
    cut: bool                  # True: acts on cut joints (closures), False: on tree joints
    members: tuple             # joint q-indices, or closure indices
    value: float


class FrictionModel:
    """Friction parameters of a robot and their generalized forces (immutable)."""

    def __init__(self, clm: ClosedLoopModel):
        self.model = clm
        spec = clm.spec.friction
        roles = {}
        for i, name in enumerate(clm.joint_names):
            if i in set(clm.platform_idx.tolist()):
                continue                      # platform joints are not physical joints
            roles.setdefault(joint_role(name), []).append(clm.joint_index[name])
        closures = [k for k, c in enumerate(clm.closures) if c.type == "point"]
        params = []
        for role, entry in spec.items():
            if role == "cut_joints":
                # members: positions in the list of point closures
                cut, members, labels = True, list(range(len(closures))), [clm.closures[k].name for k in closures]
            elif role in roles:
                cut, members = False, sorted(roles[role])
                labels = [clm.joint_names[j] for j in members]
            else:
                raise InvalidModelError(f"friction role '{role}' of '{clm.name}' matches no joint "
                                        f"(roles: {sorted(roles)} and cut_joints)")
            for kind in ("coulomb", "viscous"):
                if kind not in (entry or {}):
                    continue
                val = entry[kind]
                if np.ndim(val) == 0:
                    params.append(FrictionParameter(f"friction.{role}.{kind}", kind, cut, tuple(members),
                                                    float(val)))
                else:
                    if len(val) != len(members):
                        raise InvalidModelError(f"friction.{role}.{kind} has {len(val)} values for "
                                                f"{len(members)} joints ({labels})")
                    params += [FrictionParameter(f"friction.{role}.{kind}.{lab}", kind, cut, (mem,), float(x))
                               for lab, mem, x in zip(labels, members, val)]
        self.parameters = tuple(params)
        self.names = tuple(p.name for p in params)
        self.values = np.array([p.value for p in params])
        self.has_cut = any(p.cut for p in params)
        self._cut_frames = [clm.closures[k].frame_ids for k in closures]
        # the tree joints' share of the default values as per-joint coefficients (torque without the regressor)
        nv = clm.model.nv
        self._coulomb, self._viscous = np.zeros(nv), np.zeros(nv)
        for p in params:
            if not p.cut:
                (self._coulomb if p.kind == "coulomb" else self._viscous)[list(p.members)] += p.value
        # the cut joints' share for the compiled torque (kernels.friction_torque): per point closure its summed
        # coefficients and the +-1 signs of the angular Jacobian columns over its two frames' joint supports
        m = clm.model
        self._cut_coulomb, self._cut_viscous = np.zeros(len(closures)), np.zeros(len(closures))
        for p in params:
            if p.cut:
                (self._cut_coulomb if p.kind == "coulomb" else self._cut_viscous)[list(p.members)] += p.value
        self._cut_sign = np.zeros((len(closures) if self.has_cut else 0, nv))
        for k, frames in enumerate(self._cut_frames if self.has_cut else ()):
            for sign, fid in zip((1.0, -1.0), frames):
                for j in m.supports[m.frames[fid].parentJoint][1:]:
                    self._cut_sign[k, m.joints[j].idx_v:m.joints[j].idx_v + m.joints[j].nv] += sign
        self._no_jacobian = np.zeros((6, nv))
        for arr in (self._coulomb, self._viscous, self._cut_coulomb, self._cut_viscous, self._cut_sign,
                    self._no_jacobian):
            arr.setflags(write=False)

    def __len__(self):
        return len(self.parameters)

    @staticmethod
    def _sign(x, eps):
        return np.sign(x) if eps <= 0 else np.tanh(x / eps)

    def _cut_kinematics(self, data, q, v):
        """Per closure: (W (3 x nv) relative angular-velocity Jacobian, w = W v)."""
        m = self.model.model
        pin.computeJointJacobians(m, data, q)
        pin.updateFramePlacements(m, data)
        lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        out = []
        for fa, fb in self._cut_frames:
            W = pin.getFrameJacobian(m, data, fa, lwa)[3:] - pin.getFrameJacobian(m, data, fb, lwa)[3:]
            out.append((W, W @ v))
        return out

    def regressor(self, data, q, v, sign_eps: float = 0.0) -> np.ndarray:
        """Y_f (nv x n_params): tree generalized friction force = Y_f @ values."""
        nv = self.model.model.nv
        Y = np.zeros((nv, len(self.parameters)))
        cut = self._cut_kinematics(data, q, v) if self.has_cut else None
        for k, p in enumerate(self.parameters):
            if not p.cut:
                idx = list(p.members)
                Y[idx, k] = self._sign(v[idx], sign_eps) if p.kind == "coulomb" else v[idx]
            else:
                for c in p.members:
                    W, w = cut[c]
                    if p.kind == "viscous":
                        Y[:, k] += W.T @ w
                    else:
                        nw = np.sqrt(w @ w + sign_eps * sign_eps)
                        if nw > 0:
                            Y[:, k] += W.T @ (w / nw)
        return Y

    def torque(self, data, q, v, sign_eps: float = 0.0, values=None) -> np.ndarray:
        """Tree generalized friction force (nv): what the actuators must overcome."""
        if not self.parameters:
            return np.zeros(self.model.model.nv)
        if values is not None:
            return self.regressor(data, q, v, sign_eps) @ values
        # = regressor @ values, without building the regressor: one compiled call on pinocchio's joint Jacobians
        Jw = self._no_jacobian
        if self.has_cut:
            pin.computeJointJacobians(self.model.model, data, q)
            Jw = data.J
        out = np.empty(len(v))
        friction_torque(Jw, v, self._coulomb, self._viscous, self._cut_sign, self._cut_coulomb, self._cut_viscous,
                        float(sign_eps), out)
        return out

#!/usr/bin/env python3
"""A dense FCL sweep of the path-check benchmark's problem: the peer `haptics check` is
measured against (issue: path checks).

Reads target/check-bench/{world.obj, robot.obj, path.path}, written by
`cargo bench --bench check`, and checks the path the way a discrete motion validator
does: along each segment (position lerp, quaternion slerp on the shorter arc, as
haptics and OMPL interpolate), states spaced so that no robot point moves more than
RESOLUTION (0.2%) of the world's bounding-box diagonal between two of them, each tested
with an FCL distance query (OBBRSS hierarchies; python-fcl's bundled FCL, built without
assertions). Prints the states tested, the smallest distance found, whether any state
collided, and the wall time of the sweep (model building excluded, as on the Rust side).

Run by hand, outside the test suite:  pip install python-fcl numpy
"""

import math
import sys
import time
from pathlib import Path

import fcl
import numpy as np

RESOLUTION = 0.002


def read_obj(path):
    verts, tris = [], []
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if f[0] == "v":
            verts.append([float(x) for x in f[1:4]])
        elif f[0] == "f":
            idx = [int(x.split("/")[0]) - 1 for x in f[1:]]
            for k in range(1, len(idx) - 1):
                tris.append([idx[0], idx[k], idx[k + 1]])
    return np.array(verts, dtype=np.float64), np.array(tris, dtype=np.int64)


def model(verts, tris):
    m = fcl.BVHModel()
    m.beginModel(len(verts), len(tris))
    m.addSubModel(verts, tris)
    m.endModel()
    return m


def slerp(q0, q1, t):
    q0, q1 = np.array(q0), np.array(q1)
    d = float(np.dot(q0, q1))
    if d < 0.0:
        q1, d = -q1, -d
    if d > 1.0 - 1e-12:
        q = q0 + t * (q1 - q0)
        return q / np.linalg.norm(q)
    th = math.acos(min(1.0, d))
    return (math.sin((1 - t) * th) * q0 + math.sin(t * th) * q1) / math.sin(th)


def main():
    d = Path(sys.argv[1] if len(sys.argv) > 1 else "target/check-bench")
    wv, wt = read_obj(d / "world.obj")
    rv, rt = read_obj(d / "robot.obj")
    states = [list(map(float, l.split())) for l in open(d / "path.path") if l.strip()]
    world = fcl.CollisionObject(model(wv, wt), fcl.Transform())
    robot_geom = model(rv, rt)
    radius = float(np.max(np.linalg.norm(rv, axis=1)))
    diag = float(np.linalg.norm(wv.max(axis=0) - wv.min(axis=0)))
    step = RESOLUTION * diag
    req = fcl.DistanceRequest(enable_nearest_points=False)
    tested, best, collided = 0, math.inf, False
    start = time.perf_counter()
    for a, b in zip(states[:-1], states[1:]):
        p0, p1 = np.array(a[:3]), np.array(b[:3])
        # OMPL stores (x, y, z, w); fcl.Transform takes (w, x, y, z).
        q0 = np.array([a[6], a[3], a[4], a[5]])
        q1 = np.array([b[6], b[3], b[4], b[5]])
        dot = abs(float(np.dot(q0, q1)))
        theta = 2.0 * math.acos(min(1.0, dot))
        motion = float(np.linalg.norm(p1 - p0)) + theta * radius
        n = max(1, math.ceil(motion / step))
        for i in range(n + (1 if b is states[-1] else 0)):
            t = i / n
            tf = fcl.Transform(slerp(q0, q1, t), p0 + t * (p1 - p0))
            obj = fcl.CollisionObject(robot_geom, tf)
            res = fcl.DistanceResult()
            dist = fcl.distance(world, obj, req, res)
            tested += 1
            if dist <= 0.0:
                collided = True
            best = min(best, dist)
    seconds = time.perf_counter() - start
    print(
        f"fcl {fcl.__version__ if hasattr(fcl, '__version__') else ''}: {len(wt)} + {len(rt)} triangles, "
        f"{len(states)} states, resolution {RESOLUTION} of the world diagonal ({step:.6f}): "
        f"{tested} distance queries, min distance {best:.6f}, "
        f"{'collides' if collided else 'collision-free'}, {seconds:.3f} s"
    )


if __name__ == "__main__":
    main()

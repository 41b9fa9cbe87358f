"""Where trials run: a local process pool (default) or a Ray cluster (--cluster ADDRESS).

Both take the same picklable specs and return the trials' results in the specs' order;
`on_done(i, result)` is called as each one finishes (the progress line). Ray is the
optional extra `tinyaot[cluster]`; asking for a cluster without it is a user error.
"""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed

from ..errors import TinyAotError
from ..paths import REPO_ROOT
from .trials import run_trial


def run_local(specs, jobs, on_done):
    results = [None] * len(specs)
    if jobs <= 1 or len(specs) <= 1:  # in this process: nothing to pickle, easy to debug
        for i, s in enumerate(specs):
            results[i] = run_trial(s)
            on_done(i, results[i])
        return results
    import multiprocessing as mp  # spawn: a forked child of a process that ran onnxruntime
    # can deadlock on a lock some thread held at the fork
    with ProcessPoolExecutor(max_workers=min(jobs, len(specs)),
                             mp_context=mp.get_context("spawn")) as pool:
        futs = {pool.submit(run_trial, s): i for i, s in enumerate(specs)}
        for f in as_completed(futs):
            i = futs[f]
            results[i] = f.result()
            on_done(i, results[i])
    return results


def _ray():
    try:
        import ray
    except ImportError:
        raise TinyAotError("--cluster needs Ray: pip install 'tinyaot[cluster]'") from None
    return ray


def run_ray(specs, address, on_done):
    """Each trial a Ray task. `address`: a cluster's address (ray://host:10001, host:6379),
    "auto" (the cluster this machine belongs to) or "local" (a Ray instance started here);
    an already initialised Ray (a test's local instance) is used as it is."""
    ray = _ray()
    if not ray.is_initialized():
        # the workers import codegen from this checkout unless the cluster has it installed
        env = {"env_vars": {"PYTHONPATH": os.pathsep.join(
            p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)}}
        try:
            ray.init(address=None if address == "local" else address, runtime_env=env,
                     log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise TinyAotError(f"--cluster {address}: cannot connect to Ray ({e})") from None
    task = ray.remote(run_trial)
    refs = {task.remote(s): i for i, s in enumerate(specs)}
    results = [None] * len(specs)
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for r in done:
            i = refs[r]
            results[i] = ray.get(r)
            on_done(i, results[i])
    return results


def run_trials(specs, cluster=None, jobs=2, on_done=lambda i, r: None):
    if not specs:
        return []
    if cluster:
        return run_ray(specs, cluster, on_done)
    return run_local(specs, jobs, on_done)

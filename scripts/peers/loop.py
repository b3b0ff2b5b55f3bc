#!/usr/bin/python3
"""The peers' side of `trit-bench loop` (benchmark/loop.go): the int8 MLP and
XGBoost refitted on the same labelled windows as trit's loop.

Usage: loop.py DIR   (DIR written by `trit-bench loop`: peers.py's export plus loop.json)

Each peer is tuned once as peers.py tunes it (on trit's validation folds of
the training rows, by mean balanced accuracy, sized to the budget) and
fitted on the training rows: that is its static model. For each label
fraction of loop.json, the test period is replayed in its blocks: the model
in service predicts a block; at each retraining moment (after_block) the
peer is refitted with the tuned settings on the training rows plus the
labelled test windows so far, each repeated its number of copies (the
weights of trit's retraining, retrain.Copies), and serves from the next
block on. Results go to DIR/loop_results.json.
"""

import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers as P  # noqa: E402


def blocks(n, k):
    return [(b * n // k, (b + 1) * n // k) for b in range(k)]


def run_plan(D, method, make_fit, plan, nblocks, static_model):
    """Replays one fraction's plan; make_fit(X, y) returns a predict(X) function."""
    t0 = time.time()
    plan_steps = plan.get("steps") or []
    steps = {s["after_block"]: s for s in plan_steps}
    pred = np.zeros(len(D.yt), dtype=np.int32)
    accs = []
    model = static_model
    for b, (lo, hi) in enumerate(blocks(len(D.yt), nblocks)):
        pred[lo:hi] = model(D.Xt[lo:hi])
        accs.append(100.0 * float(np.mean(pred[lo:hi] == D.yt[lo:hi])))
        s = steps.get(b)
        if s is not None:
            rows = np.asarray(s["rows"], dtype=np.int64)
            rep = np.repeat(rows, np.asarray(s["copies"], dtype=np.int64))
            X = np.concatenate([D.X, D.Xt[rep]])
            y = np.concatenate([D.y, D.yt[rep]])
            model = make_fit(X, y)
    acc, bal, _ = P.scores(D.yt, pred, D.classes)
    labelled = len(plan_steps[-1]["rows"]) if plan_steps else 0
    return {"method": method, "labels_percent": plan["labels_percent"], "block_accuracy": accs, "accuracy": acc,
            "balanced": bal, "labelled_windows": labelled, "retrains": len(plan_steps), "promoted": 0,
            "seconds": time.time() - t0}


def static_run(D, method, model, nblocks):
    return run_plan(D, method, None, {"labels_percent": 0, "steps": []}, nblocks, model)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: loop.py DIR")
    D = P.Data(sys.argv[1])
    with open(os.path.join(D.dir, "loop.json")) as f:
        job = json.load(f)
    budget, nblocks = int(D.meta["budget"]), int(job["blocks"])
    runs = []
    if "mlp-int8" in job["methods"]:
        # Tuned as peers.py tunes it: the width the budget allows, alpha on the folds.
        h = P.mlp_width(D.d, D.c, budget)
        if h < 1:
            sys.exit("loop.py: mlp-int8: not one hidden unit fits %d bytes" % budget)
        alpha = max(P.MLP_ALPHAS, key=lambda a: D.validate(P.mlp_make(D, h, a), P.mlp_int8_predict))

        def fit_mlp(X, y):
            m = P.mlp_make(D, h, alpha)()
            m.fit(X, y)
            return lambda Z: P.mlp_int8_predict(m, Z)

        static = fit_mlp(D.X[D.fit], D.y[D.fit])
        runs.append(static_run(D, "mlp-int8", static, nblocks))
        P.log("loop mlp-int8 static: %.2f%% (h=%d, alpha=%g)" % (runs[-1]["accuracy"], h, alpha))
        for plan in job["plans"]:
            runs.append(run_plan(D, "mlp-int8", fit_mlp, plan, nblocks, static))
            P.log("loop mlp-int8 at %g%% labels: %.2f%%" % (plan["labels_percent"], runs[-1]["accuracy"]))
    if "xgboost" in job["methods"]:
        r = P.xgboost(D, [budget])[0]
        if r.get("skipped"):
            sys.exit("loop.py: xgboost: %s" % r["skipped"])
        depth, eta = r["params"]["max_depth"], r["params"]["learning_rate"]

        def fit_xgb(X, y):
            m = P.XGB(D, depth, eta, P.xgb_max_rounds(D, depth, budget)).fit(X, y)
            n, _ = P.rounds_within(m.round_nodes(), budget)
            return lambda Z: m.predict(Z, max(n, 1))

        static = fit_xgb(D.X[D.fit], D.y[D.fit])
        runs.append(static_run(D, "xgboost", static, nblocks))
        P.log("loop xgboost static: %.2f%% (depth %d, eta %g)" % (runs[-1]["accuracy"], depth, eta))
        for plan in job["plans"]:
            runs.append(run_plan(D, "xgboost", fit_xgb, plan, nblocks, static))
            P.log("loop xgboost at %g%% labels: %.2f%%" % (plan["labels_percent"], runs[-1]["accuracy"]))
    with open(os.path.join(D.dir, "loop_results.json"), "w") as f:
        json.dump({"runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()

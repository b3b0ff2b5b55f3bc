#!/usr/bin/python3
"""Peers of trit at the same byte budget, on exactly what trit saw.

Usage: peers.py DIR   (DIR written by `trit-bench peers`, see benchmark/export.go)

DIR holds x_train.npy / x_test.npy (float32, scaled by trit's fitted scaler),
y_train.npy / y_test.npy (int32 class indices), foldK_train.npy /
foldK_valid.npy (int32 row indices into the training rows: trit's validation
folds, the latest rows for time series) and meta.json. Every peer is tuned on
those folds by mean balanced accuracy (trit's selection criterion), refitted
with the chosen settings on all training rows (as trit's final fit is) and
evaluated once on the test rows. Results go to DIR/results.json. For
mlp-int8 they include its softmax confidence's accuracy-vs-coverage curve
and calibration error on the test rows, beside trit's calibrated ones.

Bytes as stored on a gateway (benchmark/budget.go has the same formulas):
  scaler      4·d           float16 low and high per feature, as in trit's bundle
  mlp-int8    h·(d+k) + 8·(h+k) + 4·d
              int8 weights, a float32 scale and bias per output channel
              (h hidden units, k outputs: the classes, or 1 for two classes)
  linear-svm  k·(d+8) + 4·d  int8 weights, float32 scale and bias per output
  logreg      k·(d+8) + 4·d  the same: logistic regression on standardized inputs,
              the standardization folded into the int8 weights
  stump       12            one feature (uint16), a float32 threshold, a class per side
                            (uint16 each); no scaler (it splits the scaled value, which
                            maps back to one raw threshold)
  majority    2             the class (uint16)
  xgboost     8 per node    float32 threshold or leaf value, uint16 feature,
              uint16 right-child offset; no scaler (trees split raw values)
  rbf-svm     4·sv·d + 4·sv·(c−1) + 4·c(c−1)/2 + 4 + 4·d  (a reference: no budget)
"""

import json
import os
import sys
import time

import numpy as np

try:
    import sklearn
    import xgboost as xgb
    from sklearn.neural_network import MLPClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC, LinearSVC
    from sklearn.tree import DecisionTreeClassifier
except ImportError as e:  # pragma: no cover
    sys.exit("peers.py: %s; install python3-sklearn and python3-xgboost (make bench-peers as root)" % e)

import warnings

from sklearn.exceptions import ConvergenceWarning

warnings.filterwarnings("ignore", category=ConvergenceWarning)

MAX_HIDDEN = 1024
MLP_ALPHAS = [1e-4, 1e-2]
MLP_ITER = 300
LINEAR_CS = [0.01, 0.1, 1, 10]
LOGREG_CS = [0.01, 0.1, 1, 10]
STUMP_WEIGHTS = [None, "balanced"]
RBF_CS = [1, 10, 100]
RBF_GAMMA_FACTORS = [0.1, 1, 10]  # times 1/(d·var(X)), scikit-learn's "scale"
XGB_DEPTHS = [2, 4, 6]
XGB_ETAS = [0.1, 0.3]
NODE_BYTES = 8


def log(*a):
    print("peers.py:", *a, file=sys.stderr, flush=True)


def outputs(classes):
    return 1 if classes == 2 else classes


def mlp_bytes(d, c, h):
    k = outputs(c)
    return h * (d + k) + 8 * (h + k) + 4 * d


def mlp_width(d, c, budget):
    k = outputs(c)
    return max(0, min(MAX_HIDDEN, (budget - 8 * k - 4 * d) // (d + k + 8)))


def linear_bytes(d, c):
    return outputs(c) * (d + 8) + 4 * d


def rbf_bytes(d, c, sv):
    return 4 * sv * d + 4 * sv * (c - 1) + 4 * (c * (c - 1) // 2) + 4 + 4 * d


def scores(y, pred, classes):
    """accuracy, balanced accuracy (mean recall over classes with rows) and per-class figures, percent."""
    acc = 100.0 * float(np.mean(y == pred))
    per = []
    recalls = []
    for i, name in enumerate(classes):
        rows = int(np.sum(y == i))
        if rows == 0:
            continue
        tp = int(np.sum((y == i) & (pred == i)))
        predicted = int(np.sum(pred == i))
        recall = 100.0 * tp / rows
        recalls.append(recall)
        per.append({"class": name, "rows": rows, "recall": recall,
                    "precision": 100.0 * tp / predicted if predicted else 0.0})
    return acc, float(np.mean(recalls)), per


def balanced(y, pred, nclasses):
    rec = [np.mean(pred[y == i] == i) for i in range(nclasses) if np.any(y == i)]
    return 100.0 * float(np.mean(rec))


def subsample(idx, y, n, seed):
    """A seeded stratified subsample of at most n of the rows idx (kept in order)."""
    if not n or len(idx) <= n:
        return idx
    rng = np.random.default_rng(seed)
    keep = []
    for c in np.unique(y[idx]):
        rows = idx[y[idx] == c]
        k = max(1, int(round(n * len(rows) / len(idx))))
        keep.append(rng.choice(rows, size=min(k, len(rows)), replace=False))
    return np.sort(np.concatenate(keep))


def quantise(w):
    """int8 per output channel (columns of w): returns (q, scale)."""
    m = np.max(np.abs(w), axis=0)
    scale = np.where(m > 0, m / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return q, scale


def mlp_int8_outputs(model, X):
    """The quantised forward pass: int8 weights × scale, float32 biases, ReLU."""
    (w1, w2), (b1, b2) = model.coefs_, model.intercepts_
    q1, s1 = quantise(w1)
    q2, s2 = quantise(w2)
    h = np.maximum(0, (X @ q1.astype(np.float32)) * s1 + b1.astype(np.float32))
    return (h @ q2.astype(np.float32)) * s2 + b2.astype(np.float32)


def mlp_int8_predict(model, X):
    return decide(model, mlp_int8_outputs(model, X))


def softmax_confidence(o):
    """The int8 network's own confidence: the predicted class's softmax
    share (the logistic of the one logit for two classes)."""
    o = o.astype(np.float64)
    if o.shape[1] == 1:
        p = 1 / (1 + np.exp(-np.abs(o[:, 0])))
        return p
    z = np.exp(o - o.max(axis=1, keepdims=True))
    return (z / z.sum(axis=1, keepdims=True)).max(axis=1)


# The coverages and ECE bins of trit's ConfidenceReport
# (training/calibrate_eval.go), so the two curves line up.
COVERAGES = [100, 98, 95, 90, 80, 70, 60, 50]
ECE_BINS = 15


def confidence_report(conf, correct):
    """Accuracy on the most confident windows at each coverage (ties in
    row order, as trit's stable sort) and the expected calibration error,
    percent."""
    order = np.argsort(-conf, kind="stable")
    curve = []
    for cov in COVERAGES:
        n = max(1, int(round(cov / 100 * len(conf))))
        curve.append({"coverage": cov, "accuracy": 100 * float(np.mean(correct[order[:n]]))})
    b = np.minimum(ECE_BINS - 1, (conf * ECE_BINS).astype(int))
    e = 0.0
    for k in range(ECE_BINS):
        i = b == k
        if i.any():
            e += i.mean() * abs(correct[i].mean() - conf[i].mean())
    return curve, 100 * e


def decide(model, o):
    """Class labels from scores: one logit for two classes, else argmax;
    through model.classes_, since a fold may lack a class."""
    if o.shape[1] == 1:
        k = (o[:, 0] > 0).astype(np.int64)
    else:
        k = np.argmax(o, axis=1)
    return np.asarray(model.classes_)[k].astype(np.int32)


def linear_int8_outputs(model, X):
    w = model.coef_.T  # d × k
    q, s = quantise(w)
    return (X @ q.astype(np.float32)) * s + model.intercept_.astype(np.float32)


def linear_int8_predict(model, X):
    return decide(model, linear_int8_outputs(model, X))


def with_ece(r, conf, pred, y):
    """Adds the confidence's accuracy-vs-coverage curve and calibration
    error on the test rows to result r."""
    r["accuracy_vs_coverage"], r["ece"] = confidence_report(conf, (pred == y).astype(np.float64))
    return r


class Data:
    def __init__(self, d):
        self.dir = d
        with open(os.path.join(d, "meta.json")) as f:
            self.meta = json.load(f)
        m = self.meta
        load = lambda name: np.load(os.path.join(d, name))
        self.X, self.y = load(m["x_train"]), load(m["y_train"])
        self.Xt, self.yt = load(m["x_test"]), load(m["y_test"])
        self.folds = [(load(f["train"]), load(f["valid"])) for f in m["folds"]]
        self.classes = m["classes"]
        self.c = len(self.classes)
        self.d = self.X.shape[1]
        self.seed = int(m.get("seed", 1)) % (2**31)
        self.threads = int(m.get("threads") or 0) or os.cpu_count()
        self.tune_rows = int(m.get("tune_rows") or 0)
        self.fit_rows = int(m.get("fit_rows") or 0)
        self.rbf_rows = int(m.get("rbf_rows") or 0)
        self.notes_tune = []
        tuned = []
        for k, (tr, va) in enumerate(self.folds):
            sub = subsample(tr, self.y, self.tune_rows, self.seed + k)
            if len(sub) < len(tr):
                self.notes_tune = ["tuned on a %d-row stratified subsample of each fold's %d training rows" % (len(sub), len(tr))]
            tuned.append((sub, va))
        self.tune = tuned
        all_rows = np.arange(len(self.y))
        self.fit = subsample(all_rows, self.y, self.fit_rows, self.seed + 99)
        self.notes_fit = []
        if len(self.fit) < len(all_rows):
            self.notes_fit = ["final fit on a %d-row stratified subsample of %d" % (len(self.fit), len(all_rows))]

    def labels_ok(self, rows):
        return len(np.unique(self.y[rows])) >= 2

    def validate(self, make, predict):
        """Mean balanced accuracy over the folds of a model made by make()."""
        vals = []
        for tr, va in self.tune:
            if not self.labels_ok(tr):
                continue
            m = make()
            m.fit(self.X[tr], self.y[tr])
            vals.append(balanced(self.y[va], predict(m, self.X[va]), self.c))
        return float(np.mean(vals)) if vals else -1.0


def result(D, method, budget, pred, nbytes, formula, t_all, t_fit, params, notes, fit_rows):
    acc, bal, per = scores(D.yt, pred, D.classes)
    return {"method": method, "budget": budget, "accuracy": acc, "balanced_accuracy": bal, "per_class": per,
            "bytes": int(nbytes), "bytes_formula": formula, "train_seconds": t_all, "fit_seconds": t_fit,
            "params": params, "notes": notes, "fit_rows": int(fit_rows)}


def skipped(method, budget, why):
    return {"method": method, "budget": budget, "accuracy": 0, "balanced_accuracy": 0, "per_class": [],
            "bytes": 0, "bytes_formula": "", "train_seconds": 0, "fit_seconds": 0, "skipped": why}


# ---- MLP, int8 ----

def mlp_make(D, h, alpha):
    return lambda: MLPClassifier(hidden_layer_sizes=(h,), alpha=alpha, max_iter=MLP_ITER, random_state=D.seed)


def mlp(D, budget, alpha=None):
    h = mlp_width(D.d, D.c, budget)
    if h < 1:
        return skipped("mlp-int8", budget, "not one hidden unit fits %d bytes (scaler alone %d)" % (budget, 4 * D.d)), None
    t0 = time.time()
    alphas = MLP_ALPHAS if alpha is None else [alpha]
    best = None
    if len(alphas) > 1:
        for a in alphas:
            v = D.validate(mlp_make(D, h, a), mlp_int8_predict)
            log("mlp-int8 h=%d alpha=%g: validation balanced %.2f%%" % (h, a, v))
            if best is None or v > best[0]:
                best = (v, a)
        alpha = best[1]
    else:
        alpha = alphas[0]
    t1 = time.time()
    m = mlp_make(D, h, alpha)()
    m.fit(D.X[D.fit], D.y[D.fit])
    t2 = time.time()
    notes = D.notes_tune + D.notes_fit
    if m.n_iter_ >= MLP_ITER:
        notes = notes + ["stopped at %d epochs" % MLP_ITER]
    o = mlp_int8_outputs(m, D.Xt)
    pred = decide(m, o)
    r = result(D, "mlp-int8", budget, pred, mlp_bytes(D.d, D.c, h),
               "h·(d+k) + 8·(h+k) + 4·d", t2 - t0, t2 - t1,
               {"hidden": h, "alpha": alpha, "epochs": int(m.n_iter_),
                "validation_balanced": best[0] if best else None}, notes, len(D.fit))
    return with_ece(r, softmax_confidence(o), pred, D.yt), alpha


# ---- XGBoost ----

class XGB:
    """XGBClassifier on the labels present in its training rows (a fold
    may lack a class; XGBoost wants labels 0…m−1)."""

    def __init__(self, D, depth, eta, rounds):
        self.D, self.depth, self.eta, self.rounds = D, depth, eta, rounds

    def fit(self, X, y):
        self.labels = np.unique(y)
        m = len(self.labels)
        obj = "binary:logistic" if m == 2 else "multi:softprob"
        self.model = xgb.XGBClassifier(n_estimators=self.rounds, max_depth=self.depth, learning_rate=self.eta,
                                       tree_method="hist", objective=obj, n_jobs=self.D.threads,
                                       random_state=self.D.seed, verbosity=0)
        self.model.fit(X, np.searchsorted(self.labels, y))
        return self

    def round_nodes(self):
        """Nodes per boosting round (all trees of the round)."""
        dump = self.model.get_booster().get_dump()
        per_tree = [len([l for l in t.split("\n") if l.strip()]) for t in dump]
        k = 1 if len(self.labels) == 2 else len(self.labels)
        return [sum(per_tree[i:i + k]) for i in range(0, len(per_tree), k)]

    def predict(self, X, rounds):
        return self.predict_confidence(X, rounds)[0]

    def predict_confidence(self, X, rounds):
        """The predicted classes and the predicted class's probability."""
        p = self.model.predict_proba(X, iteration_range=(0, rounds))
        return self.labels[np.argmax(p, axis=1)].astype(np.int32), p.max(axis=1)


def rounds_within(nodes_per_round, budget):
    total, n = 0, 0
    for x in nodes_per_round:
        if (total + x) * NODE_BYTES > budget:
            break
        total += x
        n += 1
    return n, total


def xgb_max_rounds(D, depth, budget):
    k = 1 if D.c == 2 else D.c
    # At least 3 nodes a tree (one split): an upper bound on the rounds that can fit.
    return max(1, min(2000, budget // (NODE_BYTES * 3 * k)))


def xgboost(D, budgets):
    """Tunes depth and learning rate per budget on the folds, cutting every
    model to the budget; refits each chosen setting once on all rows."""
    t0 = time.time()
    top = max(budgets)
    val = {}  # (depth, eta) -> {budget: balanced}
    for depth in XGB_DEPTHS:
        for eta in XGB_ETAS:
            per_budget = {b: [] for b in budgets}
            for tr, va in D.tune:
                if not D.labels_ok(tr):
                    continue
                m = XGB(D, depth, eta, xgb_max_rounds(D, depth, top)).fit(D.X[tr], D.y[tr])
                npr = m.round_nodes()
                for b in budgets:
                    n, _ = rounds_within(npr, b)
                    per_budget[b].append(balanced(D.y[va], m.predict(D.X[va], n), D.c) if n > 0 else -1)
            val[(depth, eta)] = {b: float(np.mean(v)) for b, v in per_budget.items()}
            log("xgboost depth=%d eta=%g: validation balanced %s" % (depth, eta, ", ".join("%d B %.2f%%" % (b, val[(depth, eta)][b]) for b in budgets)))
    t1 = time.time()
    choice = {b: max(val, key=lambda k: val[k][b]) for b in budgets}
    fitted = {}
    out = []
    for b in budgets:
        key = choice[b]
        tf = time.time()
        if key not in fitted:
            m = XGB(D, key[0], key[1], xgb_max_rounds(D, key[0], top)).fit(D.X[D.fit], D.y[D.fit])
            fitted[key] = (m, m.round_nodes(), time.time() - tf)
        m, npr, tfit = fitted[key]
        n, nodes = rounds_within(npr, b)
        if n == 0:
            out.append(skipped("xgboost", b, "not one boosting round fits %d bytes" % b))
            continue
        pred, conf = m.predict_confidence(D.Xt, n)
        out.append(with_ece(result(D, "xgboost", b, pred, NODE_BYTES * nodes,
                                   "8 bytes a node", (t1 - t0) + tfit, tfit,
                                   {"max_depth": key[0], "learning_rate": key[1], "rounds": n, "nodes": nodes,
                                    "validation_balanced": val[key][b]}, D.notes_tune + D.notes_fit, len(D.fit)),
                            conf, pred, D.yt))
    return out


# ---- linear SVM ----

def linear_svm(D, budget):
    t0 = time.time()
    make = lambda C: (lambda: LinearSVC(C=C, dual=bool(D.X.shape[0] <= D.d), max_iter=2000, random_state=D.seed))
    best = None
    for C in LINEAR_CS:
        v = D.validate(make(C), linear_int8_predict)
        log("linear-svm C=%g: validation balanced %.2f%%" % (C, v))
        if best is None or v > best[0]:
            best = (v, C)
    t1 = time.time()
    m = make(best[1])()
    m.fit(D.X[D.fit], D.y[D.fit])
    t2 = time.time()
    return result(D, "linear-svm", budget, linear_int8_predict(m, D.Xt), linear_bytes(D.d, D.c),
                  "k·(d+8) + 4·d (int8 weights)", t2 - t0, t2 - t1,
                  {"c": best[1], "validation_balanced": best[0]}, D.notes_tune + D.notes_fit, len(D.fit))


# ---- logistic regression on standardized inputs ----

class LogReg:
    """Logistic regression on inputs standardized by the training rows'
    mean and standard deviation, which fold into the weights: the model a
    gateway stores is int8 weights on the scaled inputs, as linear-svm's."""

    def __init__(self, D, C):
        self.D, self.C = D, C

    def fit(self, X, y):
        self.mu = X.mean(axis=0)
        self.sd = np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
        self.m = LogisticRegression(C=self.C, max_iter=2000, random_state=self.D.seed)
        self.m.fit((X - self.mu) / self.sd, y)
        self.classes_ = self.m.classes_
        w = self.m.coef_ / self.sd  # k × d on the unstandardized inputs
        self.coef_ = w
        self.intercept_ = self.m.intercept_ - w @ self.mu
        return self

    def outputs(self, X):
        return linear_int8_outputs(self, X)

    def predict(self, X):
        return decide(self, self.outputs(X))


def logreg(D, budget):
    t0 = time.time()
    best = None
    for C in LOGREG_CS:
        v = D.validate(lambda: LogReg(D, C), lambda m, X: m.predict(X))
        log("logreg C=%g: validation balanced %.2f%%" % (C, v))
        if best is None or v > best[0]:
            best = (v, C)
    t1 = time.time()
    m = LogReg(D, best[1]).fit(D.X[D.fit], D.y[D.fit])
    t2 = time.time()
    o = m.outputs(D.Xt)
    pred = decide(m, o)
    r = result(D, "logreg", budget, pred, linear_bytes(D.d, D.c),
               "k·(d+8) + 4·d (int8 weights)", t2 - t0, t2 - t1,
               {"c": best[1], "validation_balanced": best[0]}, D.notes_tune + D.notes_fit, len(D.fit))
    return with_ece(r, softmax_confidence(o), pred, D.yt)


# ---- one threshold (a depth-1 tree) ----

def stump(D, budget):
    t0 = time.time()
    best = None
    for cw in STUMP_WEIGHTS:
        make = lambda: DecisionTreeClassifier(max_depth=1, class_weight=cw, random_state=D.seed)
        v = D.validate(make, lambda m, X: m.predict(X).astype(np.int32))
        log("stump class_weight=%s: validation balanced %.2f%%" % (cw, v))
        if best is None or v > best[0]:
            best = (v, cw)
    t1 = time.time()
    m = DecisionTreeClassifier(max_depth=1, class_weight=best[1], random_state=D.seed).fit(D.X[D.fit], D.y[D.fit])
    t2 = time.time()
    pred = m.predict(D.Xt).astype(np.int32)
    # Its confidence: the share of the leaf's training rows of the class it predicts.
    conf = m.predict_proba(D.Xt).max(axis=1)
    t = m.tree_
    r = result(D, "stump", budget, pred, 12, "feature, threshold and a class per side", t2 - t0, t2 - t1,
               {"class_weight": best[1], "feature": int(t.feature[0]), "threshold": float(t.threshold[0]),
                "validation_balanced": best[0]}, D.notes_tune + D.notes_fit, len(D.fit))
    return with_ece(r, conf, pred, D.yt)


# ---- the majority class ----

def majority(D, budget):
    counts = np.bincount(D.y[D.fit], minlength=D.c)
    k = int(np.argmax(counts))
    pred = np.full(len(D.yt), k, dtype=np.int32)
    vals = [balanced(D.y[va], np.full(len(va), int(np.argmax(np.bincount(D.y[tr], minlength=D.c))), dtype=np.int32), D.c)
            for tr, va in D.tune]
    r = result(D, "majority", budget, pred, 2, "the class", 0.0, 0.0,
               {"class": D.classes[k], "validation_balanced": float(np.mean(vals))}, [], len(D.fit))
    return with_ece(r, np.full(len(D.yt), counts[k] / counts.sum()), pred, D.yt)


# ---- RBF SVM ----

def rbf_svm(D):
    if not D.rbf_rows:
        return skipped("rbf-svm", 0, "--rbf-rows 0")
    t0 = time.time()
    var = float(D.X.var()) or 1.0
    base = 1.0 / (D.d * var)
    notes = []
    tune = []
    for k, (tr, va) in enumerate(D.tune):
        # Tuning fits 9 settings a fold: on at most half the final row cap.
        sub = subsample(tr, D.y, max(1, D.rbf_rows // 2), D.seed + 7 + k)
        tune.append((sub, va))
    if any(len(s) < len(t) for (s, _), (t, _) in zip(tune, D.tune)):
        notes.append("tuned on ≤ %d rows of each fold" % max(len(s) for s, _ in tune))
    best = None
    for C in RBF_CS:
        for g in RBF_GAMMA_FACTORS:
            vals = []
            for tr, va in tune:
                if not D.labels_ok(tr):
                    continue
                m = SVC(C=C, gamma=g * base, kernel="rbf", cache_size=500)
                m.fit(D.X[tr], D.y[tr])
                vals.append(balanced(D.y[va], m.predict(D.X[va]).astype(np.int32), D.c))
            v = float(np.mean(vals))
            log("rbf-svm C=%g gamma=%g: validation balanced %.2f%%" % (C, g * base, v))
            if best is None or v > best[0]:
                best = (v, C, g * base)
    t1 = time.time()
    rows = subsample(np.arange(len(D.y)), D.y, D.rbf_rows, D.seed + 11)
    if len(rows) < len(D.y):
        notes.append("final fit on a %d-row stratified subsample of %d (row cap %d)" % (len(rows), len(D.y), D.rbf_rows))
    m = SVC(C=best[1], gamma=best[2], kernel="rbf", cache_size=500)
    m.fit(D.X[rows], D.y[rows])
    t2 = time.time()
    sv = int(m.support_vectors_.shape[0])
    return result(D, "rbf-svm", 0, m.predict(D.Xt).astype(np.int32), rbf_bytes(D.d, D.c, sv),
                  "4·sv·d + 4·sv·(c−1) + 4·c(c−1)/2 + 4 + 4·d", t2 - t0, t2 - t1,
                  {"c": best[1], "gamma": best[2], "support_vectors": sv, "validation_balanced": best[0]},
                  notes, len(rows))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: peers.py DIR")
    D = Data(sys.argv[1])
    m = D.meta
    budget, curve, methods = int(m["budget"]), [int(b) for b in (m.get("curve") or [])], m["methods"]
    log("%s: %d train / %d test rows, %d features, %d classes; %d validation fold(s); sklearn %s, xgboost %s"
        % (m["dataset"], len(D.y), len(D.yt), D.d, D.c, len(D.folds), sklearn.__version__, xgb.__version__))
    results, curve_out = [], []
    alpha = None
    if "mlp-int8" in methods:
        r, alpha = mlp(D, budget)
        results.append(r)
        log("mlp-int8: %.2f%%, %d bytes" % (r["accuracy"], r["bytes"]))
    if "xgboost" in methods:
        xs = xgboost(D, sorted(set([budget] + curve)))
        for r in xs:
            if r["budget"] == budget:
                results.append(r)
                log("xgboost: %.2f%%, %d bytes" % (r["accuracy"], r["bytes"]))
            if r["budget"] in curve:
                curve_out.append(r)
    if "linear-svm" in methods:
        r = linear_svm(D, budget)
        results.append(r)
        log("linear-svm: %.2f%%, %d bytes" % (r["accuracy"], r["bytes"]))
    for name, run in (("logreg", logreg), ("stump", stump), ("majority", majority)):
        if name in methods:
            r = run(D, budget)
            results.append(r)
            log("%s: %.2f%%, %d bytes" % (name, r["accuracy"], r["bytes"]))
    if "rbf-svm" in methods:
        r = rbf_svm(D)
        results.append(r)
        log("rbf-svm: %.2f%%, %d bytes" % (r.get("accuracy", 0), r.get("bytes", 0)))
    if curve and "mlp-int8" in methods:
        for b in curve:
            if b == budget and results and results[0]["method"] == "mlp-int8":
                curve_out.append(results[0])
                continue
            r, _ = mlp(D, b, alpha if alpha is not None else MLP_ALPHAS[0])
            curve_out.append(r)
            log("mlp-int8 at %d bytes: %s" % (b, r.get("skipped") or "%.2f%%" % r["accuracy"]))
    with open(os.path.join(D.dir, "results.json"), "w") as f:
        json.dump({"results": results, "curve": curve_out}, f, indent=1)


if __name__ == "__main__":
    main()

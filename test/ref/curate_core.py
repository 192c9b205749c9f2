"""ctypes bindings of the curation core (extension/curate/) in
test/libcorpqcore.so, shared by test/ref/test_curate.py and
test/bench/bench_curation_core.py.  Numbers cross as numpy float64 arrays."""
import ctypes as C
import os

import numpy as np

NOISE_TYPES = ["clean", "misaligned_neighbour", "misaligned_random", "truncated_tgt",
               "truncated_src", "appended_tgt", "appended_src", "untranslated",
               "untranslated_edited", "wrong_language", "markup"]


class Error(C.Structure):
    _fields_ = [("code", C.c_int), ("msg", C.c_char * 256)]


class Str(C.Structure):
    _fields_ = [("s", C.c_void_p), ("len", C.c_size_t)]


class NoiseOptions(C.Structure):
    _fields_ = [("seed", C.c_uint64), ("share", C.c_double * len(NOISE_TYPES))]


class NoisePair(C.Structure):
    _fields_ = [("type", C.c_int), ("base", C.c_int64), ("other", C.c_int64),
                ("src", Str), ("tgt", Str)]


class NoiseSet(C.Structure):
    _fields_ = [("pairs", C.POINTER(NoisePair)), ("n", C.c_size_t),
                ("owned", C.c_void_p), ("n_owned", C.c_size_t), ("cap_owned", C.c_size_t)]


class LangidRule(C.Structure):
    _fields_ = [("hint", C.c_bool), ("keep_unreliable", C.c_bool), ("min_chars", C.c_int)]


class FeatureSet(C.Structure):
    _fields_ = [("mask", C.c_uint64), ("src_script", C.c_int), ("tgt_script", C.c_int),
                ("src_lang", C.c_int), ("tgt_lang", C.c_int), ("langid", LangidRule)]


class Classifier(C.Structure):
    _fields_ = [("fs", FeatureSet), ("d", C.c_int), ("mean", C.POINTER(C.c_double)),
                ("scale", C.POINTER(C.c_double)), ("w", C.POINTER(C.c_double)),
                ("bias", C.c_double), ("platt_a", C.c_double), ("platt_b", C.c_double),
                ("iterations", C.c_int), ("kind", C.c_int), ("n_trees", C.c_int),
                ("depth", C.c_int), ("feat", C.POINTER(C.c_int32)),
                ("thr", C.POINTER(C.c_double)), ("leaf", C.POINTER(C.c_double)),
                ("base", C.c_double)]


LOGISTIC, TREES = 1, 2


class TrainOptions(C.Structure):
    _fields_ = [("l2", C.c_double), ("max_iter", C.c_int), ("tol", C.c_double),
                ("kind", C.c_int), ("rounds", C.c_int), ("depth", C.c_int),
                ("learning_rate", C.c_double), ("lambda_", C.c_double), ("bins", C.c_int),
                ("min_hessian", C.c_double)]


DP = C.POINTER(C.c_double)
UP = C.POINTER(C.c_ubyte)
lib = C.CDLL(os.environ.get("CORPQ_CORE_LIB", "test/libcorpqcore.so"))
lib.cq_noise_generate.argtypes = [C.POINTER(Str), C.POINTER(Str), C.c_size_t, C.POINTER(Str),
                                  C.c_size_t, C.POINTER(NoiseOptions), C.POINTER(NoiseSet),
                                  C.POINTER(Error)]
lib.cq_noise_options_default.argtypes = [C.POINTER(NoiseOptions)]
lib.cq_noise_set_free.argtypes = [C.POINTER(NoiseSet)]
lib.cq_feature_set_strings.argtypes = [C.POINTER(FeatureSet)]
lib.cq_feature_count.argtypes = [C.POINTER(FeatureSet)]
lib.cq_features_compute.argtypes = [C.POINTER(FeatureSet), C.c_char_p, C.c_size_t, C.c_char_p,
                                    C.c_size_t, DP, C.POINTER(Error)]
lib.cq_train_options_default.argtypes = [C.POINTER(TrainOptions)]
lib.cq_holdout_split.argtypes = [C.c_uint64, C.POINTER(C.c_int64), C.c_size_t, C.c_double, UP]
lib.cq_classifier_train.argtypes = [C.POINTER(FeatureSet), DP, UP, C.c_size_t, UP,
                                    C.POINTER(TrainOptions), C.POINTER(Classifier),
                                    C.POINTER(Error)]
lib.cq_classifier_prob.argtypes = [C.POINTER(Classifier), DP]
lib.cq_classifier_prob.restype = C.c_double
lib.cq_classifier_logit.argtypes = [C.POINTER(Classifier), DP]
lib.cq_classifier_logit.restype = C.c_double
lib.cq_classifier_free.argtypes = [C.POINTER(Classifier)]
lib.cq_langid_lookup.argtypes = [C.c_char_p]
lib.cq_feature_name.argtypes = [C.c_int]
lib.cq_feature_name.restype = C.c_char_p


def _feature_names():
    out = []
    while lib.cq_feature_name(len(out)) is not None:
        out.append(lib.cq_feature_name(len(out)).decode())
    return out


# the layout and the string set, from the core itself (curate/features.h)
FEATURES = _feature_names()
_fs = FeatureSet()
lib.cq_feature_set_strings(C.byref(_fs))
STRING_MASK = _fs.mask
lib.cq_script_from_name.argtypes = [C.c_char_p]


class CoreError(Exception):
    pass


def check(rc, err):
    if rc != 0:
        raise CoreError("core error %d: %s" % (rc, err.msg.decode()))


def _strs(texts):
    """A cq_str array over UTF-8 buffers (kept alive in the returned tuple)."""
    bufs = [t.encode("utf-8") for t in texts]
    arr = (Str * max(1, len(bufs)))()
    keep = []
    for i, b in enumerate(bufs):
        cb = C.create_string_buffer(b, len(b))
        keep.append(cb)
        arr[i] = Str(C.cast(cb, C.c_void_p), len(b))
    return arr, keep


def _text(s):
    return C.string_at(s.s, s.len).decode("utf-8") if s.len else ""


def noise(src, tgt, other=(), seed=1, shares=None):
    """[(type name, base, other, src, tgt)] of cq_noise_generate."""
    o = NoiseOptions()
    lib.cq_noise_options_default(C.byref(o))
    o.seed = seed
    for name, share in (shares or {}).items():
        o.share[NOISE_TYPES.index(name)] = share
    s, ks = _strs(src)
    t, kt = _strs(tgt)
    f, kf = _strs(other)
    out, err = NoiseSet(), Error()
    check(lib.cq_noise_generate(s, t, len(src), f, len(other), C.byref(o), C.byref(out),
                                C.byref(err)), err)
    try:
        return [(NOISE_TYPES[p.type], p.base, p.other, _text(p.src), _text(p.tgt))
                for p in out.pairs[:out.n]]
    finally:
        lib.cq_noise_set_free(C.byref(out))


def feature_set(mask=STRING_MASK, src_lang=None, tgt_lang=None):
    fs = FeatureSet()
    lib.cq_feature_set_strings(C.byref(fs))
    fs.mask = mask
    if src_lang:
        fs.src_lang = lib.cq_langid_lookup(src_lang.encode())
        fs.tgt_lang = lib.cq_langid_lookup(tgt_lang.encode())
        fs.langid = LangidRule(True, True, 0)      # the langid filter's defaults
    return fs


def feature_names(fs):
    return [f for i, f in enumerate(FEATURES) if fs.mask >> i & 1]


def features(fs, pairs):
    """An n x d float64 matrix of the core's features of (src, tgt) pairs."""
    d = lib.cq_feature_count(C.byref(fs))
    x = np.zeros((len(pairs), d))
    row = (C.c_double * d)()
    err = Error()
    for i, (s, t) in enumerate(pairs):
        bs, bt = s.encode("utf-8"), t.encode("utf-8")
        check(lib.cq_features_compute(C.byref(fs), bs, len(bs), bt, len(bt), row, C.byref(err)), err)
        x[i] = row[:]
    return x


def holdout_split(seed, groups, frac):
    g = np.ascontiguousarray(groups, dtype=np.int64)
    out = np.zeros(len(g), dtype=np.uint8)
    lib.cq_holdout_split(seed, g.ctypes.data_as(C.POINTER(C.c_int64)), len(g), frac,
                         out.ctypes.data_as(UP))
    return out


def train(fs, x, y, holdout, l2=None, trees=False, **tree_options):
    """The core's classifier: a dict of its numbers and a prob function
    (trees=True: boosted trees, options by TrainOptions' field names)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.uint8)
    h = np.ascontiguousarray(holdout, dtype=np.uint8)
    o = TrainOptions()
    lib.cq_train_options_default(C.byref(o))
    if l2 is not None:
        o.l2 = l2
    o.kind = TREES if trees else LOGISTIC
    for k, v in tree_options.items():
        setattr(o, k, v)
    c, err = Classifier(), Error()
    check(lib.cq_classifier_train(C.byref(fs), x.ctypes.data_as(DP), y.ctypes.data_as(UP),
                                  len(y), h.ctypes.data_as(UP), C.byref(o), C.byref(c),
                                  C.byref(err)), err)
    d = c.d
    res = {"mean": np.array(c.mean[:d]), "scale": np.array(c.scale[:d]),
           "w": np.array(c.w[:d]), "bias": c.bias, "platt_a": c.platt_a,
           "platt_b": c.platt_b, "iterations": c.iterations, "l2": o.l2, "kind": c.kind}
    if c.kind == TREES:
        inner = (1 << c.depth) - 1
        res.update(base=c.base, n_trees=c.n_trees, depth=c.depth,
                   feat=np.array(c.feat[:c.n_trees * inner]).reshape(c.n_trees, inner),
                   thr=np.array(c.thr[:c.n_trees * inner]).reshape(c.n_trees, inner),
                   leaf=np.array(c.leaf[:c.n_trees * (inner + 1)]).reshape(c.n_trees, inner + 1),
                   options={f: getattr(o, f) for f, _ in TrainOptions._fields_})

    def prob(rows):
        rows = np.ascontiguousarray(rows, dtype=np.float64)
        return np.array([lib.cq_classifier_prob(C.byref(c), rows[i].ctypes.data_as(DP))
                         for i in range(len(rows))])

    def logit(rows):
        rows = np.ascontiguousarray(rows, dtype=np.float64)
        return np.array([lib.cq_classifier_logit(C.byref(c), rows[i].ctypes.data_as(DP))
                         for i in range(len(rows))])
    res["prob"], res["logit"], res["_c"] = prob, logit, c
    return res

"""Symmetrisation of the core against a Python re-implementation of
fast_align's atools (intersect, union, grow-diag, grow-diag-final,
grow-diag-final-and), written from its definition, on random directional
alignments of random shapes (including empty ones and dense ones).
"""
import random
import sys

import test_align_common as A

NEIGHBOURS = [(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1)]


def reference(mode, ns, nt, fwd, rev):
    a, b = set(fwd), set(rev)
    if mode == "intersect":
        return sorted(a & b)
    if mode == "union":
        return sorted(a | b)
    res = set(a & b)
    s_al = {s for s, _ in res}
    t_al = {t for _, t in res}

    def add(p):
        res.add(p)
        s_al.add(p[0])
        t_al.add(p[1])

    # grow-diag: sweep the remaining union points in (s, t) order until no
    # sweep adds one; a point needs an unaligned word and an aligned neighbour
    todo = sorted((a | b) - res)
    grown = True
    while grown:
        grown = False
        added = []
        for s, t in todo:
            if (s not in s_al or t not in t_al) and any((s + ds, t + dt) in res for ds, dt in NEIGHBOURS):
                add((s, t))
                added.append((s, t))
                grown = True
        todo = [p for p in todo if p not in added]
    if mode == "grow-diag":
        return sorted(res)
    both = mode == "grow-diag-final-and"
    for d in (a, b):
        for s, t in sorted(d):
            if (s, t) in res:
                continue
            if (s not in s_al and t not in t_al) if both else (s not in s_al or t not in t_al):
                add((s, t))
    return sorted(res)


def random_viterbi(rng, n_from, n_to, null_rate):
    return [(rng.randrange(n_to) if rng.random() > null_rate else -1) for _ in range(n_from)]


def main():
    rng = random.Random(11)
    cases = mismatches = links = 0
    for trial in range(3000):
        ns, nt = rng.randint(0, 12), rng.randint(0, 12)
        if trial % 3 == 0:
            # directional Viterbi alignments, as fast_align gives them
            f = random_viterbi(rng, nt, ns, 0.2) if ns else [-1] * nt
            r = random_viterbi(rng, ns, nt, 0.2) if nt else [-1] * ns
            fwd = [(i, j) for j, i in enumerate(f) if i >= 0]
            rev = [(i, j) for i, j in enumerate(r) if j >= 0]
        else:
            # arbitrary link sets, near-diagonal so growth has work to do
            dens = rng.random()
            fwd = [(s, t) for s in range(ns) for t in range(nt)
                   if rng.random() < dens * (0.9 if abs(s - t) < 2 else 0.1)]
            rev = [(s, t) for s in range(ns) for t in range(nt)
                   if rng.random() < dens * (0.9 if abs(s - t) < 2 else 0.1)]
        for mode in A.SYM_MODES:
            cases += 1
            ours = A.core_symmetrize(mode, ns, nt, fwd, rev)
            links += len(ours)
            if ours != reference(mode, ns, nt, fwd, rev):
                mismatches += 1
    print(f"symmetrisation: {cases} cases (5 modes x 3000 random pairs up to 12 x 12, "
          f"{links} links), mismatches with the atools re-implementation: {mismatches}")
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# The multiuat scorer against PyTorch, and its resume (corpq preloaded):
#   ref:    a multiuat job on a generated 3-domain corpus (sizes 20:4:1);
#           its history (corpq.train_sampling) is replayed with torch:
#           psi = log(prior), torch.optim.Adam(lr, betas 0.9/0.999, eps 1e-8,
#           float64) kept across updates, scorer_steps steps per update on
#           -sum_n R(n) log softmax(psi)_n with the rewards the job logged;
#           every logged distribution must match torch's to 1e-9;
#   killed: the same job with its worker killed (SIGKILL) after the first
#           checkpoint: it resumes with the scorer state of the checkpoint
#           and must end with the same history (probabilities and rewards
#           to 1e-12) and byte-identical weights.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
corpq_in_cluster -t 900 -o shared_preload_libraries=corpq -o max_worker_processes=16

OPTS='{"strategy": "multiuat", "measure": "enteos", "steps": 80, "max_tokens": 512, "lr": 0.003,
       "warmup": 10, "seed": 7, "update_every": 10, "passes": 3, "scorer_steps": 50,
       "scorer_lr": 0.02, "dev_tokens": 256, "checkpoint_every": 30, "threads": 1}'

q -c "CREATE EXTENSION corpq"
q >/dev/null <<'SQL'
CREATE TABLE pairs AS
SELECT g AS id,
       (ARRAY['big', 'mid', 'small'])[CASE WHEN g % 25 < 20 THEN 1 WHEN g % 25 < 24 THEN 2 ELSE 3 END] AS domain,
       (SELECT string_agg('w' || ((g * 7919 + k * 104729 + (g % 13) * k * k) % 30), ' ' ORDER BY k)
          FROM generate_series(1, 3 + g % 5) k) AS src
  FROM generate_series(1, 2500) g;
ALTER TABLE pairs ADD COLUMN tgt text;
UPDATE pairs SET tgt = (SELECT string_agg('v' || ((substr(w, 2)::int * CASE domain WHEN 'small' THEN 11 ELSE 7 END + 3) % 30), ' ' ORDER BY o)
                          FROM regexp_split_to_table(src, ' ') WITH ORDINALITY t(w, o));
SELECT corpq.vocab_build('b_src', 'SELECT src FROM pairs');
SELECT corpq.vocab_build('b_tgt', 'SELECT tgt FROM pairs');
SELECT corpq.model_create(m, '{"preset": "tiny", "max_positions": 32}', 'b_src', 'b_tgt', 1)
  FROM unnest(ARRAY['ref', 'killed']) m;
SQL
submit() {
	q -c "SELECT corpq.train('$1', 'SELECT src, tgt, domain FROM pairs WHERE (id / 7) % 10 <> 5 ORDER BY id',
	                         'SELECT src, tgt, domain FROM pairs WHERE (id / 7) % 10 = 5 ORDER BY id', '$OPTS')"
}
final_md5() {
	q -c "SELECT md5(corpq.model_export('$1'))"
}

ref=$(submit ref)
[ "$(q -c "SELECT corpq.job_wait($ref, '600 s')")" = succeeded ] || fail "ref: $(q -c "SELECT error FROM corpq.jobs WHERE id = $ref")"
hist=$(mktemp)
q -F ' ' -c "SELECT step, corpus, probability, coalesce(reward, 'NaN') FROM corpq.train_sampling
              WHERE job = $ref ORDER BY step, corpus" > "$hist"
log "ref: $(( $(wc -l < "$hist") / 3 )) distributions (step 0 and every update)"
/usr/bin/python3 - "$hist" <<'PY' || fail "the scorer differs from torch"
import sys, collections, torch
rows = collections.OrderedDict()
for line in open(sys.argv[1]):
    step, corpus, p, r = line.split()
    rows.setdefault(int(step), []).append((corpus, float(p), float(r)))
steps = list(rows)
p0 = torch.tensor([p for _, p, _ in rows[steps[0]]], dtype=torch.float64)
psi = torch.log(p0).clone().requires_grad_(True)
opt = torch.optim.Adam([psi], lr=0.02, betas=(0.9, 0.999), eps=1e-8)
worst = 0.0
for s in steps[1:]:
    R = torch.tensor([r for _, _, r in rows[s]], dtype=torch.float64)
    for _ in range(50):
        opt.zero_grad()
        loss = -(R * torch.log_softmax(psi, 0)).sum()
        loss.backward()
        opt.step()
    ours = torch.tensor([p for _, p, _ in rows[s]], dtype=torch.float64)
    err = (torch.softmax(psi, 0) - ours).abs().max().item()
    worst = max(worst, err)
    print("step %d: ours %s torch %s |diff| %.2e" % (s, [round(x, 6) for x in ours.tolist()],
          [round(x, 6) for x in torch.softmax(psi, 0).tolist()], err))
moved = (torch.softmax(psi, 0) - p0).abs().max().item()
print("max |p - p_torch| over %d updates: %.3e; distribution moved by up to %.4f from the prior" % (len(steps) - 1, worst, moved))
sys.exit(0 if worst < 1e-9 and moved > 1e-3 else 1)
PY

job=$(submit killed)
for _ in $(seq 3000); do
	[ "$(q -c "SELECT count(*) FROM corpq.train_checkpoints WHERE job = $job")" -ge 1 ] && break
	sleep 0.1
done
pid=$(q -c "SELECT worker_pid FROM corpq.jobs WHERE id = $job")
at=$(q -c "SELECT max(step) FROM corpq.train_checkpoints WHERE job = $job")
[ -n "$pid" ] && [ -n "$at" ] || fail "killed: no checkpoint or worker"
log "kill -9 of worker $pid of job $job after its checkpoint at step $at"
kill -9 "$pid"
sleep 1
cluster_ready
[ "$(q -c "SELECT corpq.job_wait($job, '600 s')")" = succeeded ] || fail "killed: $(q -c "SELECT state, error FROM corpq.jobs WHERE id = $job")"
[ "$(q -c "SELECT attempts FROM corpq.jobs WHERE id = $job")" = 2 ] || fail "killed: not 2 attempts"
same=$(q -c "SELECT count(*) = (SELECT count(*) FROM corpq.train_sampling WHERE job = $ref)
                    AND bool_and(abs(a.probability - b.probability) < 1e-12
                                 AND (a.reward IS NULL AND b.reward IS NULL OR abs(a.reward - b.reward) < 1e-12))
               FROM corpq.train_sampling a JOIN corpq.train_sampling b USING (step, corpus)
              WHERE a.job = $ref AND b.job = $job")
[ "$same" = t ] || fail "killed: the resumed history differs from the uninterrupted run: $(q -c "SELECT string_agg(step || ' ' || corpus || ' ' || a.probability || ' ' || b.probability, '; ')
	       FROM corpq.train_sampling a JOIN corpq.train_sampling b USING (step, corpus)
	      WHERE a.job = $ref AND b.job = $job AND a.probability IS DISTINCT FROM b.probability")"
[ "$(final_md5 killed)" = "$(final_md5 ref)" ] || fail "killed: final weights differ from the uninterrupted run"
log "killed: resumed from step $(q -c "SELECT result ->> 'resumed_from_step' FROM corpq.jobs WHERE id = $job"), same history and final weights as the uninterrupted run"
log "ok"

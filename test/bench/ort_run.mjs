// ONNX Runtime (onnxruntime-node) side of bench_nn.py and bench_translate.py.
//
// node ort_run.mjs JOB.json  (ORT_NODE_DIR: the directory holding
// node_modules/onnxruntime-node, installed there by onnx_ort.py)
//
// The job names the graphs (onnx_export.py) and the inputs; the results go
// back as one JSON object on stdout.  Times are CPU seconds of this process
// (process.cpuUsage, user + system), best of `reps` after one untimed warm-up
// run, like the Python side's thread CPU time: session.run executes on the
// calling thread and the session has one intra-op and one inter-op thread, so
// the process time is the runtime's work plus the JavaScript driving it.
// Wall seconds are reported next to them.  onnx_ort.py starts node with
// --single-threaded: V8's background threads (concurrent garbage collection
// of the large output buffers) would otherwise add CPU time on other cores
// that the single-threaded C and PyTorch sides do not have.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.env.ORT_NODE_DIR;
if (!dir) throw new Error("ORT_NODE_DIR is not set");
const ort = createRequire(join(dir, "package.json"))("onnxruntime-node");

const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
const BOS = 0, PAD = 1, EOS = 2;

function options() {
  return {
    intraOpNumThreads: job.threads ?? 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: "all",
    executionMode: "sequential",
  };
}

function cpuNow() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

// CPU seconds spent inside session.run, so that the JavaScript around it
// (the beam search, building tensors) can be told apart
let inRun = 0;
async function run(session, feeds, fetches) {
  const c0 = cpuNow();
  const out = await (fetches ? session.run(feeds, fetches) : session.run(feeds));
  inRun += cpuNow() - c0;
  return out;
}

// best CPU and wall time of reps runs of fn after a warm-up run, and the
// share of the best run's CPU time spent inside session.run
async function timed(fn, reps) {
  let out = await fn();
  let cpu = Infinity, wall = Infinity, share = NaN;
  for (let i = 0; i < reps; i++) {
    const c0 = cpuNow(), w0 = performance.now(), r0 = inRun;
    out = await fn();
    const c = cpuNow() - c0;
    if (c < cpu) share = (inRun - r0) / c;
    cpu = Math.min(cpu, c);
    wall = Math.min(wall, (performance.now() - w0) / 1e3);
  }
  return { cpu, wall, share, out };
}

const i64 = (a, dims) => new ort.Tensor("int64", BigInt64Array.from(a, BigInt), dims);

// ---- scoring: one teacher-forced forward per batch ------------------------
// A batch arrives as {src: [[ids]], din: [[ids]], gold: [[ids]]}, already
// with </s> and the start token; rows are padded with PAD here.
function padded(rows) {
  const L = Math.max(...rows.map((r) => r.length));
  const a = new Array(rows.length * L).fill(PAD);
  rows.forEach((r, b) => r.forEach((x, j) => (a[b * L + j] = x)));
  return i64(a, [rows.length, L]);
}

async function score(session, batches, reps) {
  const feeds = batches.map((b) => ({ src: padded(b.src), din: padded(b.din), gold: padded(b.gold) }));
  return timed(async () => {
    const res = [];
    for (const f of feeds) res.push(await run(session, f));
    return res;
  }, reps);
}

// ---- translation: beam search over the encoder + decoder-step graphs ------
// The search is torch_search.RefTranslator's (fairseq's): K hypotheses per
// sentence (all K rows from the start token at step 0, only row 0 counted),
// the top 2K of cumulative log-probability over K x V candidates, an </s>
// among the first K finishes a hypothesis, the first K others go on; a
// sentence stops with K finished or at its max length, where </s> is forced.
// BOS and PAD are never chosen; </s> is banned before min length.
class Searcher {
  constructor(enc, step, o) {
    this.enc = enc;
    this.step = step;
    this.o = o;
    this.n = o.layers;
  }

  async translate(srcs, maxl, minl) {
    const { beam: K, V, heads: H, dh, start, lenpen } = this.o;
    const n = this.n;
    const seqs = srcs.map((s) => [...s, EOS]);
    let B = seqs.length;
    const S = Math.max(...seqs.map((s) => s.length));
    const src = padded(seqs);
    let okArr = new Uint8Array(B * S);
    seqs.forEach((s, b) => okArr.fill(1, b * S, b * S + s.length));
    const eo = await run(this.enc, { src });
    let cross = [];
    for (let i = 0; i < n; i++) cross.push(eo["cross_k" + i], eo["cross_v" + i]);
    let alive = seqs.map((_, b) => b);
    let R = B * K;
    let cache = [];
    for (let i = 0; i < 2 * n; i++) cache.push(new ort.Tensor("float32", new Float32Array(0), [R, H, 0, dh]));
    let beamIdx = BigInt64Array.from({ length: R }, (_, r) => BigInt(r));
    let toks = Array.from({ length: R }, () => []);
    let cum = new Float64Array(R);
    let ignore = Array.from({ length: B }, () => new Array(K).fill(false));
    const finals = seqs.map(() => []);
    const maxStep = Math.max(...alive.map((b) => maxl[b]));
    const cand = new Float64Array(2 * K), candIdx = new Int32Array(2 * K);
    // the grown caches are written by the runtime straight into two sets of
    // buffers allocated once, used in turn as this step's input and the
    // next one's output: otherwise the binding would allocate and copy a new
    // JavaScript buffer per cache tensor and step, and collect the old ones
    const room = R * H * (maxStep + 1) * dh;
    const pools = [0, 1].map(() => Array.from({ length: 2 * n }, () => new Float32Array(room)));
    for (let step = 0; step <= maxStep; step++) {
      const tokIn = BigInt64Array.from(toks, (t) => BigInt(step === 0 ? start : t[t.length - 1]));
      const feeds = {
        tok: new ort.Tensor("int64", tokIn, [B, K]),
        pos: new ort.Tensor("int64", BigInt64Array.of(BigInt(step)), []),
        ok: new ort.Tensor("bool", okArr, [B, S]),
        beam_idx: new ort.Tensor("int64", beamIdx, [beamIdx.length]),
      };
      for (let i = 0; i < n; i++) {
        feeds["self_k" + i] = cache[2 * i];
        feeds["self_v" + i] = cache[2 * i + 1];
        feeds["cross_k" + i] = cross[2 * i];
        feeds["cross_v" + i] = cross[2 * i + 1];
      }
      const fetches = { top_lp: null, top_id: null, eos_lp: null };
      const pool = pools[step % 2], dims = [B * K, H, step + 1, dh];
      for (let i = 0; i < 2 * n; i++)
        fetches[(i % 2 ? "new_v" : "new_k") + (i >> 1)] =
          new ort.Tensor("float32", pool[i].subarray(0, B * K * H * (step + 1) * dh), dims);
      const out = await run(this.step, feeds, fetches);
      const topLp = out.top_lp.data, topId = out.top_id.data, eosLp = out.eos_lp.data;
      const M = out.top_lp.dims[1];
      for (let i = 0; i < n; i++) cache[2 * i] = out["new_k" + i], cache[2 * i + 1] = out["new_v" + i];
      const keep = [], nextSrc = [], nextTok = [], nextCum = [], nextIgnore = [];
      for (let s = 0; s < B; s++) {
        const sent = alive[s];
        const force = step >= maxl[sent], banEos = !force && step < minl[sent];
        const rows = step === 0 ? 1 : K;
        // top 2K candidates over the sentence's rows, best first (ties: the
        // lower row, then the order TopK gave), from each row's best M =
        // 2K + 3 (the graph's TopK): after dropping the masked tokens at
        // least 2K of each row remain, so the sentence's best 2K are among them
        const want = Math.min(2 * K, rows * V - 1);
        let have = 0;
        const offer = (v, idx) => {
          if (have === want && !(v > cand[have - 1])) return;
          let p = have < want ? have++ : have - 1;
          while (p > 0 && cand[p - 1] < v) {
            cand[p] = cand[p - 1];
            candIdx[p] = candIdx[p - 1];
            p--;
          }
          cand[p] = v;
          candIdx[p] = idx;
        };
        for (let j = 0; j < rows; j++) {
          const r = s * K + j, c = step === 0 ? 0 : cum[r];
          if (force) {            // only </s> may follow
            offer(c + eosLp[r], j * V + EOS);
            continue;
          }
          for (let m = 0; m < M; m++) {
            const t = Number(topId[r * M + m]);
            if (t === BOS || t === PAD || (t === EOS && banEos)) continue;
            offer(c + topLp[r * M + m], j * V + t);
          }
        }
        const f = finals[sent];
        const active = [], excluded = [];
        for (let i = 0; i < have; i++) {
          const j = Math.floor(candIdx[i] / V), t = candIdx[i] % V;
          const isEos = t === EOS && cand[i] !== -Infinity;
          if (isEos && i < K && !ignore[s][i] && f.length < K) {
            const logprob = cand[i];
            f.push({ tokens: toks[s * K + j].slice(), logprob, score: logprob / Math.pow(step + 1, lenpen) });
          }
          if (isEos || (i < K && ignore[s][i])) excluded.push(i);
          else active.push(i);
        }
        if (f.length >= K || step >= maxl[sent]) continue;
        // fewer than K candidates left: fill with excluded ones, which may
        // not finish later (the reference's `ignore`)
        const pick = active.concat(excluded).slice(0, K);
        keep.push(s);
        nextIgnore.push(pick.map((i) => excluded.includes(i)));
        for (const i of pick) {
          const j = Math.floor(candIdx[i] / V), t = candIdx[i] % V;
          nextSrc.push(s * K + j);
          nextTok.push(toks[s * K + j].concat([t]));
          nextCum.push(cand[i]);
        }
      }
      if (keep.length === 0) break;
      if (keep.length < B) {
        // sentences finished: keep only the others' cross keys/values,
        // moved down in place (keep is increasing, so nothing is overwritten
        // before it is moved, and the sentences before the first finished one
        // are not copied at all)
        const nb = keep.length;
        cross = cross.map((c) => {
          const per = c.data.length / B, d = c.data;
          keep.forEach((s, k) => s !== k && d.copyWithin(k * per, s * per, (s + 1) * per));
          return new ort.Tensor("float32", d.subarray(0, nb * per), [nb, ...c.dims.slice(1)]);
        });
        const ok2 = new Uint8Array(nb * S);
        keep.forEach((s, k) => ok2.set(okArr.subarray(s * S, (s + 1) * S), k * S));
        okArr = ok2;
        alive = keep.map((s) => alive[s]);
        B = nb;
      }
      beamIdx = BigInt64Array.from(nextSrc, BigInt);
      toks = nextTok;
      cum = Float64Array.from(nextCum);
      ignore = nextIgnore;
      R = B * K;
    }
    return finals.map((f) => {
      const best = f.slice().sort((a, b) => b.score - a.score)[0];
      return best ? best.tokens : [];
    });
  }
}

async function main() {
  const res = { versions: { "onnxruntime-node": ort.env.versions?.common ?? "?", node: process.version } };
  for (const [key, paths] of Object.entries(job.models)) {
    if (job.mode === "score") {
      const session = await ort.InferenceSession.create(paths[0], options());
      const r = (res[key] = {});
      for (const run of job.runs) {
        const t = await score(session, run.batches, job.reps);
        r[run.name] = { cpu: t.cpu, wall: t.wall, in_run: t.share, pairs: run.batches.reduce((n, b) => n + b.src.length, 0) };
      }
      // per-position outputs of the check batch, for the comparison in Python
      const c = await score(session, [job.check], 0);
      const o = c.out[0];
      r.check = {
        T: o.logp.dims[1],
        logp: Array.from(o.logp.data), p_max: Array.from(o.p_max.data),
        entropy: Array.from(o.entropy.data), argmax: Array.from(o.argmax.data, Number),
      };
      await session.release();
    } else {
      const enc = await ort.InferenceSession.create(paths[0], options());
      const step = await ort.InferenceSession.create(paths[1], options());
      const s = new Searcher(enc, step, job.search);
      const { srcs, maxl, minl, batch } = job;
      const t = await timed(async () => {
        let out = [];
        for (let i = 0; i < srcs.length; i += batch)
          out = out.concat(await s.translate(srcs.slice(i, i + batch), maxl.slice(i, i + batch),
                                             minl.slice(i, i + batch)));
        return out;
      }, job.reps);
      res[key] = { cpu: t.cpu, wall: t.wall, in_run: t.share, sentences: srcs.length, hyps: t.out };
      await enc.release();
      await step.release();
    }
  }
  process.stdout.write(JSON.stringify(res) + "\n");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

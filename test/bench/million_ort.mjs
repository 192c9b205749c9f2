// ONNX Runtime (onnxruntime-node) batch scoring for bench_million's peer
// (million_peer.py score): streams token ids from a file, scores them in
// batches with the teacher-forced graph of onnx_export.py, streams the sums
// out.
//
// node million_ort.mjs GRAPH IN OUT THREADS MAX_PAIRS MAX_POSITIONS START
//   (ORT_NODE_DIR: the directory holding node_modules/onnxruntime-node,
//   installed there by onnx_ort.py)
//
// IN: one pair a line, "id<TAB>source ids with </s><TAB>target ids", in the
// order to batch them (million_peer.py sorts them by length).  A batch takes
// up to MAX_PAIRS pairs and at most MAX_POSITIONS padded target positions
// (pairs x the longest target + 1).  OUT: "id<TAB>sum of log p(gold) over
// the target and </s><TAB>positions" per pair, in the input's order.
// The session: THREADS intra-op threads, one inter-op thread, graph
// optimisation "all", sequential execution (as ort_run.mjs), only the logp
// output fetched.
import { createRequire } from "node:module";
import { createReadStream, createWriteStream } from "node:fs";
import { createInterface } from "node:readline";
import { once } from "node:events";
import { join } from "node:path";

const dir = process.env.ORT_NODE_DIR;
if (!dir) throw new Error("ORT_NODE_DIR is not set");
const ort = createRequire(join(dir, "package.json"))("onnxruntime-node");

const [graph, inPath, outPath, threads, maxPairs, maxPositions, start] = process.argv.slice(2);
const PAD = 1n, EOS = 2n, START = BigInt(start);

const session = await ort.InferenceSession.create(graph, {
  intraOpNumThreads: Number(threads),
  interOpNumThreads: 1,
  graphOptimizationLevel: "all",
  executionMode: "sequential",
});
const out = createWriteStream(outPath);

// the padded id tensors of a batch: src [B, S]; din = start + target and
// gold = target + </s>, both [B, T + 1]
function tensors(batch) {
  const B = batch.length;
  const S = Math.max(...batch.map((r) => r.src.length));
  const T = Math.max(...batch.map((r) => r.tgt.length)) + 1;
  const src = new BigInt64Array(B * S).fill(PAD);
  const din = new BigInt64Array(B * T).fill(PAD);
  const gold = new BigInt64Array(B * T).fill(PAD);
  batch.forEach((r, b) => {
    r.src.forEach((x, j) => (src[b * S + j] = BigInt(x)));
    din[b * T] = START;
    r.tgt.forEach((x, j) => {
      din[b * T + 1 + j] = BigInt(x);
      gold[b * T + j] = BigInt(x);
    });
    gold[b * T + r.tgt.length] = EOS;
  });
  return {
    T,
    feeds: {
      src: new ort.Tensor("int64", src, [B, S]),
      din: new ort.Tensor("int64", din, [B, T]),
      gold: new ort.Tensor("int64", gold, [B, T]),
    },
  };
}

async function score(batch) {
  const { T, feeds } = tensors(batch);
  const res = await session.run(feeds, ["logp"]);
  const lp = res.logp.data;
  const lines = batch.map((r, b) => {
    let s = 0;
    for (let j = 0; j <= r.tgt.length; j++) s += lp[b * T + j];
    return `${r.id}\t${s}\t${r.tgt.length + 1}\n`;
  });
  if (!out.write(lines.join(""))) await once(out, "drain");
}

const ids = (s) => (s === "" ? [] : s.split(" ").map(Number));
let batch = [];
let longest = 0;
for await (const line of createInterface({ input: createReadStream(inPath), crlfDelay: Infinity })) {
  const [id, s, t] = line.split("\t");
  const r = { id, src: ids(s), tgt: ids(t) };
  const need = Math.max(longest, r.tgt.length + 1) * (batch.length + 1);
  if (batch.length && (batch.length === Number(maxPairs) || need > Number(maxPositions))) {
    await score(batch);
    batch = [];
    longest = 0;
  }
  batch.push(r);
  longest = Math.max(longest, r.tgt.length + 1);
}
if (batch.length) await score(batch);
out.end();
await once(out, "finish");
await session.release();

/**
 * Summarises a V8 .cpuprofile (node --cpu-prof): self time by function and by file, and the
 * total (inclusive) time of the heaviest functions, as shares of the sampled time.
 *
 * Run: node --import tsx bench/profile-summary.ts <file.cpuprofile> [top=30]
 */
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
const [file, topArg = "30"] = process.argv.slice(2);
if (!file) throw new Error("usage: profile-summary.ts <file.cpuprofile> [top]");
const topN = Number(topArg);
const profile = JSON.parse(readFileSync(file, "utf8")) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const hits = new Map<number, number>();
profile.samples.forEach((id, i) => hits.set(id, (hits.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const short = (url: string) => url.replace(/^file:\/\/.*?\/(lib|bench|node_modules)\//, "$1/").replace(/^node:/, "node:");
const label = (n: Node) => `${n.callFrame.functionName || "(anon)"} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
let total = 0;
const self = new Map<string, number>();
const files = new Map<string, number>();
const incl = new Map<string, number>();
for (const [id, us] of hits) {
  const n = byId.get(id)!;
  total += us;
  self.set(label(n), (self.get(label(n)) ?? 0) + us);
  const f = short(n.callFrame.url) || `(${n.callFrame.functionName})`;
  files.set(f, (files.get(f) ?? 0) + us);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!);
    if (seen.has(l)) continue;
    seen.add(l);
    incl.set(l, (incl.get(l) ?? 0) + us);
  }
}
const show = (title: string, m: Map<string, number>, k: number) => {
  console.log(`\n${title}`);
  for (const [l, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, k)) console.log(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(1).padStart(8)} ms  ${l}`);
};
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`);
show("self time by function", self, topN);
show("self time by file", files, 20);
show("total time by function", incl, topN);

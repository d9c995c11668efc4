// tok_js.mjs - the JavaScript side of tests/bench/tok.sh: load a
// tokenizer.json with @huggingface/tokenizers and encode one text file.
//   node tests/bench/tok_js.mjs TOKENIZER.json TEXT
// Prints load_s, encode_s, MBps, bytes, tokens (tab-separated lines).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const pkgdir = process.env.TOKENIZERS_JS || path.join(root, "build/node/node_modules/@huggingface/tokenizers");
const { Tokenizer } = await import(path.join(pkgdir, "dist/tokenizers.mjs"));
const [tfile, xfile] = process.argv.slice(2);
const buf = fs.readFileSync(xfile);
const text = buf.toString("utf8");
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
let t0 = performance.now(), c0 = cpu();
const tk = new Tokenizer(JSON.parse(fs.readFileSync(tfile, "utf8")), {});
const load = (performance.now() - t0) / 1e3, loadc = cpu() - c0;
tk.encode(text.slice(0, 20000), { add_special_tokens: false }); // warm up the JIT
t0 = performance.now(); c0 = cpu();
const ids = tk.encode(text, { add_special_tokens: false }).ids;
const enc = (performance.now() - t0) / 1e3, encc = cpu() - c0;
console.log(`load_s\t${load.toFixed(3)}\nload_cpu_s\t${loadc.toFixed(3)}\nencode_s\t${enc.toFixed(4)}\nencode_cpu_s\t${encc.toFixed(4)}\nMBps\t${(buf.length / enc / 1e6).toFixed(2)}\nMBps_cpu\t${(buf.length / encc / 1e6).toFixed(2)}\nbytes\t${buf.length}\ntokens\t${ids.length}`);

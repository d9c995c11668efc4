// gen_expect.mjs - expected tokenizations from Hugging Face's JavaScript
// implementation (npm package @huggingface/tokenizers), run by node.
//
//   npm install --prefix build/node @huggingface/tokenizers
//   node tests/tok/gen_expect.mjs            # rewrites tests/tok/expect/*.jsonl
//
// Inputs: tests/tok/corpus.jsonl (hand-written strings, one {"cat","s"} per
// line) and RANDOM strings drawn from tests/tok/pool.json with mulberry32
// (seed SEED; tests/tools/tok_check.c draws the same ones).
// Output, per tokenizer, one JSONL file: a header line, then one line per
// string: {"ids": encode without the post-processor} plus "dec" when
// decode(ids) differs from the input and "post" when encode with the
// post-processor is not header.pre + ids + header.suf.  decode() is called
// with clean_up_tokenization_spaces false (a transformers display option,
// not part of tokenizer.json).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const pkgdir = process.env.TOKENIZERS_JS ||
	path.join(root, "build/node/node_modules/@huggingface/tokenizers");
const { Tokenizer } = await import(path.join(pkgdir, "dist/tokenizers.mjs"));
const version = JSON.parse(fs.readFileSync(path.join(pkgdir, "package.json"), "utf8")).version;

export const SEED = 20260101, RANDOM = 200, MAXFRAG = 24;
export const TOKENIZERS = {
	qwen3: "tests/data/tokenizers/qwen3/tokenizer.json",
	llama3_1: "tests/data/tokenizers/llama3_1/tokenizer.json",
	deepseek_v3: "tests/data/tokenizers/deepseek_v3/tokenizer.json",
	mistral: "tests/data/tokenizers/mistral/tokenizer.json",
	stories260k: "examples/models/stories260k/tokenizer.json",
	tiny: "tests/tok/tiny/tokenizer.json",
};

function mulberry32(a) {
	return () => {
		a = (a + 0x6d2b79f5) | 0;
		let t = Math.imul(a ^ (a >>> 15), 1 | a);
		t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
		return (t ^ (t >>> 14)) >>> 0;
	};
}

export function strings() {
	const corpus = fs.readFileSync(path.join(here, "corpus.jsonl"), "utf8")
		.split("\n").filter((l) => l).map((l) => JSON.parse(l).s);
	const pool = JSON.parse(fs.readFileSync(path.join(here, "pool.json"), "utf8"));
	const r = mulberry32(SEED), rnd = [];
	for (let i = 0; i < RANDOM; i++) {
		const n = 1 + (r() % MAXFRAG);
		let s = "";
		for (let j = 0; j < n; j++) s += pool[r() % pool.length];
		rnd.push(s);
	}
	return { corpus, rnd };
}

const { corpus, rnd } = strings();
const all = corpus.concat(rnd);
fs.mkdirSync(path.join(here, "expect"), { recursive: true });
for (const [name, file] of Object.entries(TOKENIZERS)) {
	const tj = JSON.parse(fs.readFileSync(path.join(root, file), "utf8"));
	const tk = new Tokenizer(tj, {});
	// what the post-processor adds around an empty-free sequence
	const probe = tk.encode("a", { add_special_tokens: false }).ids;
	const probed = tk.encode("a").ids;
	let at = -1;
	for (let i = 0; i + probe.length <= probed.length; i++)
		if (probe.every((x, k) => probed[i + k] === x)) { at = i; break; }
	const pre = probed.slice(0, at), suf = probed.slice(at + probe.length);
	const lines = [JSON.stringify({ tokenizer: file, generator: `@huggingface/tokenizers ${version}`,
		seed: SEED, n_corpus: corpus.length, n_random: rnd.length, pre, suf })];
	for (const s of all) {
		const ids = tk.encode(s, { add_special_tokens: false }).ids;
		const post = tk.encode(s).ids;
		const o = { ids };
		const dec = ids.length ? tk.decode(ids, { clean_up_tokenization_spaces: false }) : "";
		if (dec !== s) o.dec = dec;
		const want = pre.concat(ids, suf);
		if (post.length !== want.length || post.some((x, k) => x !== want[k])) o.post = post;
		lines.push(JSON.stringify(o));
	}
	fs.writeFileSync(path.join(here, "expect", `${name}.jsonl`), lines.join("\n") + "\n");
	console.log(`${name}: ${all.length} strings`);
}

#!/usr/bin/env bash
# tests/bench/peers/build.sh - llama.cpp for make bench-peers, built once
# into $SS_BUILD/peers (a CPU-only native build of the llama.cpp release
# that the npm package node-llama-cpp carries as a git bundle).
#   $SS_BUILD/peers/src          the bundle's checkout (convert script, gguf-py)
#   $SS_BUILD/peers/build/bin    llama-bench
# PEERS_NPM_PKG (default node-llama-cpp@3.22.1) names the package; the
# download goes through npm's own client and cache ($SS_BUILD/peers/npm).
# The build runs niced on PEERS_JOBS (default 2) cores; a finished build
# is reused (delete $SS_BUILD/peers to rebuild).
set -eu
: "${SS_ROOT:=$(cd "$(dirname "$0")/../../.." && pwd)}" "${SS_BUILD:=$SS_ROOT/build}"
P=$SS_BUILD/peers
PKG=${PEERS_NPM_PKG:-node-llama-cpp@3.22.1}
if [ -x "$P/build/bin/llama-bench" ] && [ -f "$P/src/convert_hf_to_gguf.py" ]; then
	echo "# peers: llama.cpp cached in $P ($(cat "$P/version" 2>/dev/null))"
	exit 0
fi
mkdir -p "$P/npm" "$P/pkg"
if [ ! -d "$P/src/.git" ]; then
	( cd "$P/pkg" && rm -f ./*.tgz && npm pack "$PKG" --silent --cache "$P/npm" >/dev/null )
	tgz=$(ls "$P/pkg"/*.tgz | head -1)
	rm -rf "$P/pkg/package"
	tar -xzf "$tgz" -C "$P/pkg"
	bundle=$(find "$P/pkg/package" -name '*.bundle' | head -1)
	[ -n "$bundle" ] || { echo "peers: no git bundle in $tgz" >&2; exit 1; }
	rm -rf "$P/src"
	git -c advice.detachedHead=false clone -q "$bundle" "$P/src"
	tag=$(sed -n 's/.*"tag": *"\([^"]*\)".*/\1/p' "$P/pkg/package/llama/llama.cpp.info.json" 2>/dev/null)
	echo "llama.cpp ${tag:-?} ($(git -C "$P/src" rev-parse --short HEAD)) from $(basename "$tgz" .tgz)" >"$P/version"
fi
cmake -S "$P/src" -B "$P/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
	-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
	-DLLAMA_OPENSSL=OFF -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF >"$P/cmake.log" 2>&1 ||
	{ echo "peers: cmake failed, see $P/cmake.log" >&2; exit 1; }
nice -n 15 cmake --build "$P/build" --target llama-bench -j "${PEERS_JOBS:-2}" >"$P/build.log" 2>&1 ||
	{ echo "peers: build failed, see $P/build.log" >&2; exit 1; }
echo "# peers: built $(cat "$P/version") in $P"

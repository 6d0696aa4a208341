#!/usr/bin/env bash
# Builds llama.cpp's HTTP server (llama-server) once per machine, from the llama.cpp that
# llama-cpp-python's PyPI source distribution vendors (a package registry, nothing else), and
# links it where the tests look (tests/support/llama.py): $BENCHTUI_LLAMA_CACHE/llama-server,
# by default /var/cache/benchtui/llama-server/llama-server (~/.cache/benchtui/... where /var/cache
# is not writable). Only the llama-server target, no web UI, no libcurl. A second run finds the
# build and returns at once. The last line on stdout is the binary's path.
# See docs/development/system-tools.md.
set -euo pipefail
VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
if [ -z "${BENCHTUI_LLAMA_CACHE:-}" ]; then
  if mkdir -p /var/cache/benchtui/llama-server 2>/dev/null && [ -w /var/cache/benchtui/llama-server ]; then
    BENCHTUI_LLAMA_CACHE=/var/cache/benchtui/llama-server
  else
    BENCHTUI_LLAMA_CACHE="$HOME/.cache/benchtui/llama-server"
  fi
fi
CACHE="$BENCHTUI_LLAMA_CACHE"
DEST="$CACHE/$VERSION"
LINK="$CACHE/llama-server"
if [ -x "$DEST/bin/llama-server" ]; then
  ln -sfn "$VERSION/bin/llama-server" "$LINK.tmp" && mv -Tf "$LINK.tmp" "$LINK"
  echo "$LINK"
  exit 0
fi
for tool in cmake c++ make; do
  command -v "$tool" >/dev/null || { echo "llama-server: cannot build without $tool" >&2; exit 3; }
done
mkdir -p "$CACHE"
WORK="$(mktemp -d "$CACHE/build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)
pip download -q --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$WORK" >&2
tar -xzf "$WORK"/llama_cpp_python-"$VERSION".tar.gz -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
[ -f "$SRC/CMakeLists.txt" ] || { echo "llama-server: the sdist vendors no llama.cpp" >&2; exit 3; }
nice -n 10 cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >&2
nice -n 10 cmake --build "$WORK/build" --target llama-server -j "${LLAMA_BUILD_JOBS:-2}" >&2
mkdir -p "$WORK/out/bin"
cp "$WORK/build/bin/llama-server" "$WORK/out/bin/llama-server"
echo "$(( $(date +%s) - start ))" > "$WORK/out/build-seconds"
rm -rf "$DEST" && mv "$WORK/out" "$DEST"
ln -sfn "$VERSION/bin/llama-server" "$LINK.tmp" && mv -Tf "$LINK.tmp" "$LINK"
echo "llama-server built in $(cat "$DEST/build-seconds") s" >&2
echo "$LINK"

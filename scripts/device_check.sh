#!/usr/bin/env bash
# The device check (issue 11), the part that runs here:
#   1. builds amptrain and the CUDA tests with the CUDA backend (sm_90 plus
#      compute_90 PTX) into ${BUILD_DIR:-build-cuda};
#   2. packs them, stripped, with every shared library ldd lists for them
#      except the system's own (glibc, libstdc++, libgcc_s: any Linux image
#      has them) and the CUDA runtime, cuBLAS and cuDNN (the GPU machine has
#      those in its Python's nvidia-* wheels; run.sh finds them there), plus
#      run.sh (scripts/device_run.sh) and the PyTorch yardstick, into
#      device/amptrain-device.tar.gz (device/ is ignored by git), < 60 MiB.
# On the GPU machine, in one call:
#   tar xzf amptrain-device.tar.gz && bash amptrain-device/run.sh "$OUT"
# which writes the results table to $OUT/results.md (scripts/device_run.sh).
#
#   bash scripts/device_check.sh [--try-here]
# --try-here: also unpack the tarball into a temporary folder and run it here
# under `env -i`, with the GPU libraries from a folder laid out like the
# wheels, and check with ldd that every library it packs is loaded from the
# tarball. Without a GPU it must start and fail cleanly, row by row.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-cuda}
PACK=device/amptrain-device.tar.gz
LIMIT_MIB=60

AMPTRAIN_CUDA=ON BUILD_DIR="$BUILD_DIR" TARGETS="amptrain cuda_tests" bash scripts/build.sh

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/amptrain-device
mkdir -p "$root/bin" "$root/lib"
for b in tools/amptrain tests/cuda_tests; do
  strip --strip-unneeded -o "$root/bin/$(basename "$b")" "$BUILD_DIR/$b"
done

# Libraries: everything ldd resolves (transitively) but these.
SYSTEM='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so)'
ON_DEVICE='^(libcuda\.so|libcudart\.so|libcublas\.so|libcublasLt\.so|libcudnn|libnvrtc|libnvJitLink)'
ldd "$root"/bin/* | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u | while read -r name path; do
  [[ $name =~ $SYSTEM || $name =~ $ON_DEVICE ]] && continue
  cp -L "$path" "$root/lib/$name"
  strip --strip-unneeded "$root/lib/$name" 2>/dev/null || true
done

cp scripts/device_run.sh "$root/run.sh"
cp tools/bench/torch_gpu_train_bench.py models/torch/export_models.py "$root/"
{
  echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- kernels tools tests/cuda || echo '+local changes')"
  echo "built $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n) with $(nvcc --version | tail -1), CUDA architectures 90-real;90-virtual"
} >"$root/MANIFEST"

mkdir -p device
tar -C "$stage" -czf "$PACK" amptrain-device
size=$(stat -c %s "$PACK")
echo "device check: $PACK, $((size / 1024 / 1024)) MiB ($(ls "$root/lib" | wc -l) libraries: $(ls "$root/lib" | paste -sd' ' -))"
if [ "$size" -ge $((LIMIT_MIB * 1024 * 1024)) ]; then
  echo "device check: the tarball is over ${LIMIT_MIB} MiB" >&2
  exit 1
fi
[ "${1:-}" = --try-here ] || exit 0

# ---- try it here: a clean environment, GPU libraries as the wheels hold them ----
try=$(mktemp -d)
trap 'rm -rf "$stage" "$try"' EXIT
tar -C "$try" -xzf "$PACK"
mkdir -p "$try/site-packages/nvidia/cu13/lib" "$try/site-packages/nvidia/cudnn/lib"
for l in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
  ln -s "/usr/local/cuda/lib64/$l" "$try/site-packages/nvidia/cu13/lib/$l"
done
for l in /usr/local/cuda/lib64/libcudnn*.so.9; do ln -s "$l" "$try/site-packages/nvidia/cudnn/lib/"; done
libs="$try/amptrain-device/lib:$try/site-packages/nvidia/cu13/lib:$try/site-packages/nvidia/cudnn/lib"
echo "== which copy of each packed library the binaries load (all must be the tarball's)"
strays=$(env -i LD_LIBRARY_PATH="$libs" ldd "$try/amptrain-device/bin/amptrain" "$try/amptrain-device/bin/cuda_tests" |
  awk '$2 == "=>" {print $1, $3}' | sort -u | while read -r name path; do
    if [ -e "$try/amptrain-device/lib/$name" ] && [ "$path" != "$try/amptrain-device/lib/$name" ]; then echo "$name -> $path"; fi
  done)
if [ -n "$strays" ]; then
  echo "device check: packed libraries loaded from elsewhere: $strays" >&2
  exit 1
fi
env -i LD_LIBRARY_PATH="$libs" ldd "$try/amptrain-device/bin/amptrain" | grep -E 'not found|libcudnn\.|libcublas\.|libdnnl' || true
echo "== run.sh under env -i (PATH only; PYTHON=/nonexistent: no PyTorch here)"
env -i PATH=/usr/bin:/bin HOME="$try" PYTHON=/nonexistent LD_LIBRARY_PATH="$libs" \
  bash "$try/amptrain-device/run.sh" "$try/out" || true

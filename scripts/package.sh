#!/usr/bin/env bash
# Builds the portable bundle (what `make package` runs, through the CMake
# target `bundle`):
#   OUT/ortgpu-VERSION-linux-x86_64.tar.gz, unpacking to ortgpu-VERSION-linux-x86_64/
#     bin/ortgpu      RUNPATH $ORIGIN/../lib, debug info stripped
#     lib/            libonnxruntime.so.1, the CUDA EP (libonnxruntime_providers_cuda.so,
#                     libonnxruntime_providers_shared.so) and every shared library ortgpu
#                     needs beyond glibc and libstdc++/libgcc_s, each with RUNPATH $ORIGIN
#     LICENSES/       ONNX Runtime's LICENSE and each bundled library's Debian copyright file
#     README.md       deploy/bundle/README.md; MANIFEST: each library, its package and version
# The libraries are found at package time by ldd (the dynamic loader's own
# resolution of the built binary); one it cannot resolve fails the build.
# CUDA, cuDNN and the driver are not bundled: they come from the host or the
# CUDA runtime image, and `ortgpu doctor` checks them there.
#
#   scripts/package.sh BINARY ORT_ROOT VERSION OUT
set -euo pipefail
say() { echo "package: $*" >&2; }
[ $# -eq 4 ] || { say "usage: package.sh BINARY ORT_ROOT VERSION OUT"; exit 2; }
binary=$1 ort_root=$2 version=$3 out=$4
src=$(cd "$(dirname "$0")/.." && pwd)
command -v patchelf >/dev/null || { say "patchelf is not installed; run: scripts/setup.sh (apt-get install patchelf)"; exit 1; }
[ -f "$ort_root/LICENSE" ] || { say "$ort_root/LICENSE is missing: ONNX Runtime's licence must ship with it; rerun scripts/fetch_ort.sh (or use an official release as ORT_ROOT)"; exit 1; }

name=ortgpu-$version-linux-x86_64
stage=$out/$name
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib" "$stage/LICENSES"

cp "$binary" "$stage/bin/ortgpu"
strip --strip-debug "$stage/bin/ortgpu"
patchelf --set-rpath '$ORIGIN/../lib' "$stage/bin/ortgpu"

# ONNX Runtime and its CUDA EP: ortgpu links libonnxruntime.so.1, which loads
# the providers from its own folder, so they sit side by side in lib/.
for lib in libonnxruntime.so.1 libonnxruntime_providers_shared.so libonnxruntime_providers_cuda.so; do
  [ -f "$ort_root/lib/$lib" ] || { say "$ort_root/lib/$lib is missing; ORT_ROOT must be a GPU release"; exit 1; }
  cp -L "$ort_root/lib/$lib" "$stage/lib/$lib"
done
cp "$ort_root/LICENSE" "$stage/LICENSES/onnxruntime.LICENSE"
echo "libonnxruntime.so.1 onnxruntime $(cat "$ort_root/VERSION" 2>/dev/null || echo unknown)" >"$stage/MANIFEST"

# Every other library the loader resolves for the built binary, less the C
# and C++ runtimes every Linux system has (glibc, libstdc++, libgcc_s).
is_system() {
  case $1 in
    linux-vdso.so.* | ld-linux-*.so.* | libc.so.* | libm.so.* | libdl.so.* | librt.so.* | libpthread.so.* \
      | libstdc++.so.* | libgcc_s.so.* | libonnxruntime*) return 0 ;;
  esac
  return 1
}
# The Debian package that installed PATH ("" when none did). dpkg knows a file
# by the path its package ships, which usrmerge may have moved (/lib -> /usr/lib).
package_of() {
  local p=$1 real q pkg
  real=$(readlink -f "$p")
  for q in "$p" "$real" "/usr${p#/usr}" "/usr${real#/usr}" "${p#/usr}" "${real#/usr}"; do
    pkg=$(dpkg-query -S "$q" 2>/dev/null | grep -v '^diversion' | head -1 | cut -d: -f1)
    [ -n "$pkg" ] && { echo "$pkg"; return 0; }
  done
  return 0
}
ldd_out=$(ldd "$binary")
if grep -q "not found" <<<"$ldd_out"; then
  say "ldd cannot resolve every library of $binary:"; grep "not found" <<<"$ldd_out" >&2; exit 1
fi
while read -r soname arrow path _; do
  [ "$arrow" = "=>" ] || continue
  is_system "$soname" && continue
  pkg=$(package_of "$path")
  [ -n "$pkg" ] || { say "$path ($soname) belongs to no Debian package, so its licence is unknown; install it from Debian"; exit 1; }
  copyright=/usr/share/doc/$pkg/copyright
  [ -f "$copyright" ] || { say "$copyright is missing for $soname; reinstall $pkg"; exit 1; }
  cp -L "$path" "$stage/lib/$soname"
  chmod 644 "$stage/lib/$soname"
  # RUNPATH is not inherited: each library finds its own dependencies in lib/.
  patchelf --set-rpath '$ORIGIN' "$stage/lib/$soname"
  cp "$copyright" "$stage/LICENSES/$pkg.copyright"
  echo "$soname $pkg $(dpkg-query -W -f='${Version}' "$pkg")" >>"$stage/MANIFEST"
done <<<"$ldd_out"
sort -o "$stage/MANIFEST" "$stage/MANIFEST"

# The newest glibc and libstdc++ symbol versions the bundle needs: the oldest
# system it runs on (README.md states them).
need() { objdump -T "$stage"/bin/ortgpu "$stage"/lib/*.so* 2>/dev/null | grep -o "$1_[0-9.]*" | sort -Vu | tail -1; }
glibc=$(need GLIBC) glibcxx=$(need GLIBCXX)
sed -e "s/@VERSION@/$version/g" -e "s/@GLIBC@/${glibc#GLIBC_}/g" -e "s/@GLIBCXX@/${glibcxx#GLIBCXX_}/g" \
  "$src/deploy/bundle/README.md" >"$stage/README.md"

tarball=$out/$name.tar.gz
# Reproducible: sorted names, no owners, a fixed time. gzip -1: the bundle is
# mostly ORT's and CUDA's machine code, which -6 shrinks only 2.6% more (207
# against 213 MB) in twice the time, and `make test` builds it on every run.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$out" -cf - "$name" | gzip -n -1 >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"
say "$tarball ($(du -h "$tarball" | cut -f1); $(wc -l <"$stage/MANIFEST") libraries; needs glibc >= ${glibc#GLIBC_})"
echo "$tarball"

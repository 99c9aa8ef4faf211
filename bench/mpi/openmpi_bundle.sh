#!/usr/bin/env bash
# Copies what `mpirun -np N --oversubscribe --allow-run-as-root PROGRAM` needs on one host, and what
# building against MPI needs (headers, mpicc/mpicxx for CMake's FindMPI), from this machine's
# Debian Open MPI 4.1 (openmpi-bin, libopenmpi3, openmpi-common, libpmix2 and the libraries they
# link) into a relocatable bundle, build-deps/openmpi/, for a machine without Open MPI of a
# compatible glibc. Use it there with
#
#   . build-deps/openmpi/env.sh        # PATH, LD_LIBRARY_PATH, OPAL_PREFIX, PMIx's prefix, MCA
#
# The bundle mirrors Debian's layout under its own prefix, so that OPAL_PREFIX=<bundle> moves
# every directory Open MPI computes from its prefix (libdir lib/x86_64-linux-gnu/openmpi/lib with
# the MCA components in openmpi3/, pkgdatadir share/openmpi with the help texts and the wrapper
# data, includedir lib/x86_64-linux-gnu/openmpi/include), and PMIX_PREFIX=<bundle>/lib/
# x86_64-linux-gnu/pmix2 with its libdir, datadir and sysconfdir (Debian's are absolute paths, not
# relative to the prefix) does the same for PMIx (its components in lib/pmix, help in share/pmix).
# The libraries (Open MPI's, PMIx, hwloc, libevent, munge, udev, zlib) sit in Open MPI's libdir,
# found through LD_LIBRARY_PATH (which the binaries' RUNPATH, /usr/lib/x86_64-linux-gnu/openmpi/
# lib, comes after). glibc, libstdc++ and libgcc_s are the machine's.
#
# MCA components are copied when every library they link is one of those: the ones for UCX,
# libfabric (ofi), PSM/PSM2, verbs (openib), netlink and OpenSHMEM are left out, which leaves the
# shared-memory (vader) and TCP transports with ob1; env.sh selects them.
#
# usage: bench/mpi/openmpi_bundle.sh [DEST]   (default: build-deps/openmpi)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-$here/../../build-deps/openmpi}
triplet=x86_64-linux-gnu
sys=/usr/lib/$triplet
ompi_pkglib=$sys/openmpi/lib/openmpi3
pmix_prefix=$sys/pmix2
die() {
  echo "openmpi_bundle.sh: $*" >&2
  exit 1
}
for package in openmpi-bin libopenmpi3 openmpi-common libpmix2; do
  dpkg -s "$package" >/dev/null 2>&1 || die "$package missing"
done

libdir=$dest/lib/$triplet/openmpi/lib
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/etc" "$libdir/openmpi3" "$dest/lib/$triplet/openmpi/include" \
  "$dest/lib/$triplet/pmix2/lib/pmix" "$dest/share/openmpi" "$dest/lib/hwloc"

# The machine's own libraries (glibc, the C++ runtime): never copied.
system_lib() {
  case $1 in
  ld-linux*.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | \
    libresolv.so.* | libutil.so.* | libstdc++.so.* | libgcc_s.so.*) return 0 ;;
  esac
  return 1
}
# The libraries the bundle carries; a component linking any other is left out.
bundled_lib() {
  case $1 in
  libmpi.so.* | libmpi_cxx.so.* | libopen-rte.so.* | libopen-pal.so.* | libmca_common_sm.so.* | \
    libmca_common_monitoring.so.* | libmca_common_ompio.so.* | libpmix.so.* | libhwloc.so.* | \
    libevent_core-*.so.* | libevent_pthreads-*.so.* | libmunge.so.* | libudev.so.* | libz.so.*)
    return 0 ;;
  esac
  return 1
}
# The sonames FILE needs, directly or not, that are not the machine's; fails when one is not to
# be bundled or not found.
needs() {
  local soname path
  while read -r soname path; do
    system_lib "$soname" && continue
    bundled_lib "$soname" && [ -e "$path" ] || return 1
    echo "$path"
  done < <(ldd "$1" | awk '/=>/ { print $1, $3 }')
}

libs=()
add_needs() { # FILE: adds what it links to libs; fails as needs() does
  local found
  found=$(needs "$1") || return 1
  [ -n "$found" ] && mapfile -t -O "${#libs[@]}" libs <<<"$found"
  return 0
}

# The launcher (mpirun is orterun), the daemon, ompi_info, and the compiler wrapper.
for tool in orterun orted ompi_info opal_wrapper; do
  cp -L "/usr/bin/$tool" "$dest/bin/$tool"
  add_needs "/usr/bin/$tool" || die "$tool links a library not bundled"
done
ln -s orterun "$dest/bin/mpirun"
ln -s orterun "$dest/bin/mpiexec"
for wrapper in mpicc mpicxx mpic++ mpiCC; do
  ln -s opal_wrapper "$dest/bin/$wrapper"
done
libs+=("$sys/libmpi_cxx.so.40") # the C++ bindings, which mpicxx links
add_needs "$sys/libmpi_cxx.so.40"

# Open MPI's components whose libraries are all bundled.
kept=() skipped=()
for component in "$ompi_pkglib"/*.so; do
  name=$(basename "$component")
  if add_needs "$component"; then
    cp -L "$component" "$libdir/openmpi3/$name"
    kept+=("${name%.so}")
  else
    skipped+=("${name%.so}")
  fi
done
# PMIx's components (zlib compression, the resource managers' default), its help texts and
# its default parameters.
for component in "$pmix_prefix"/lib/pmix/*.so; do
  if add_needs "$component"; then
    cp -L "$component" "$dest/lib/$triplet/pmix2/lib/pmix/"
  else
    skipped+=("$(basename "${component%.so}")")
  fi
done
cp -rL "$pmix_prefix/share" "$dest/lib/$triplet/pmix2/"

# The libraries, under their sonames, and the names the linker looks for.
for lib in $(printf '%s\n' "${libs[@]}" | sort -u); do
  soname=$(basename "$lib")
  cp -L "$lib" "$libdir/$soname"
done
for name in mpi mpi_cxx open-rte open-pal; do
  ln -sf "$(basename "$libdir"/lib$name.so.*)" "$libdir/lib$name.so"
done

# Help texts and the compiler wrappers' data (the wrappers' ${includedir} and ${libdir} follow
# OPAL_PREFIX), and Debian's default parameters (the system configuration directory does not
# follow OPAL_PREFIX: env.sh points OPAL_SYSCONFDIR at etc/).
cp -rL /usr/share/openmpi/. "$dest/share/openmpi/"
cp -L /etc/openmpi/openmpi-mca-params.conf /etc/openmpi/openmpi-default-hostfile "$dest/etc/"

# The headers a C or C++ MPI program includes (mpi.h, which includes the C++ bindings; no
# Fortran, no OpenSHMEM).
src_include=$sys/openmpi/include
include=$dest/lib/$triplet/openmpi/include
for header in mpi.h mpi_portable_platform.h mpi-ext.h mpio.h; do
  [ -e "$src_include/$header" ] && cp -L "$src_include/$header" "$include/"
done
mkdir -p "$include/openmpi/ompi/mpi"
cp -rL "$src_include/openmpi/ompi/mpi/cxx" "$include/openmpi/ompi/mpi/"
if [ -d "$src_include/openmpi/mpiext" ]; then
  cp -rL "$src_include/openmpi/mpiext" "$include/openmpi/"
fi

cat >"$dest/env.sh" <<'EOF'
# Open MPI from this bundle (made by bench/mpi/openmpi_bundle.sh): source it, with the
# bundle's folder as its argument or from its own folder (bash):
#   . build-deps/openmpi/env.sh [BUNDLE]
_ompi_bundle=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
_ompi_bundle=$(cd "$_ompi_bundle" && pwd)
export OPAL_PREFIX=$_ompi_bundle
export OPAL_SYSCONFDIR=$_ompi_bundle/etc
_ompi_libdir=$_ompi_bundle/lib/x86_64-linux-gnu/openmpi/lib
export PATH=$_ompi_bundle/bin${PATH:+:$PATH}
export LD_LIBRARY_PATH=$_ompi_libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# PMIx (Open MPI's ext3x component uses the bundled libpmix): Debian built it with its libdir,
# datadir and sysconfdir absolute, so each follows the prefix only when given; its components
# (pkglibdir, lib/pmix), help texts (pkgdatadir, share/pmix) and pmix-mca-params.conf follow.
export PMIX_PREFIX=$_ompi_bundle/lib/x86_64-linux-gnu/pmix2
export PMIX_EXEC_PREFIX=$PMIX_PREFIX PMIX_LIBDIR=$PMIX_PREFIX/lib
export PMIX_INCLUDEDIR=$PMIX_PREFIX/include PMIX_DATAROOTDIR=$PMIX_PREFIX/share
export PMIX_DATADIR=$PMIX_PREFIX/share PMIX_SYSCONFDIR=$PMIX_PREFIX/share
# PMIx searches its pkglibdir, then this parameter, whose default is Debian's pkglibdir.
export PMIX_MCA_mca_base_component_path=$PMIX_PREFIX/lib/pmix
# Only the bundled components, explicitly; the rest were left out of the bundle.
export OMPI_MCA_mca_base_component_path=$_ompi_libdir/openmpi3
# One host: started without ssh (the isolated launcher), shared memory between the ranks
# (copy-in/copy-out: containers often forbid the cross-process reads of CMA), ob1.
export OMPI_MCA_plm=isolated
export OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_pml=ob1
export OMPI_MCA_osc=^ucx,pt2pt
# hwloc's plugins (PCI, CUDA, ...) are not bundled: an empty folder instead of the system's.
export HWLOC_PLUGINS_PATH=$_ompi_bundle/lib/hwloc
# mpirun as root (containers) without --allow-run-as-root, more ranks than cores without
# --oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# CMake's FindMPI: the wrappers.
export MPI_C_COMPILER=$_ompi_bundle/bin/mpicc MPI_CXX_COMPILER=$_ompi_bundle/bin/mpicxx
unset _ompi_bundle _ompi_libdir
EOF

echo "components: ${#kept[@]} kept; left out: ${skipped[*]}"
du -sh "$dest"

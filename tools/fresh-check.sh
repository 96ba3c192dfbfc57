#!/usr/bin/env bash
# The README's quick start on a fresh machine: a minimal Debian 12 root (debootstrap, variant
# minbase) with a clean copy of this tree (its last commit, git archive) and ../shared beside
# it, in which the README's two commands run exactly as printed, in both orders, each order in a
# root of its own, then the README's follow-up lines, one at a time, also as printed. Prints
# each command's time and exit status, and ends non-zero when one failed or went over its time
# (the quick start 5 minutes, the tests 30).
#   tools/fresh-check.sh [--order quickstart-first|tests-first|both] [WORKDIR]
# Needs root (chroot, mount) and Debian's package mirror; WORKDIR (default build-fresh/) keeps
# the debootstrapped base as a tarball, so a second run starts from it. Commands inside run
# with a fresh HOME and no cache: what a new user's first run costs.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
order=both
if [ "${1:-}" = --order ]; then
  order=${2:?--order takes quickstart-first, tests-first or both}
  shift 2
fi
work=${1:-$src/build-fresh}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" = 0 ] || { echo "fresh-check: needs root (debootstrap, chroot, mount)" >&2; exit 1; }
command -v debootstrap >/dev/null || tools/deps.sh debootstrap
mkdir -p "$work"
work=$(cd "$work" && pwd)
base=$work/bookworm-minbase.tar
if [ ! -f "$base" ]; then
  echo "== debootstrap: Debian 12 (bookworm), minbase, from $mirror"
  rm -rf "$work/base"
  debootstrap --variant=minbase bookworm "$work/base" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  tar -C "$work/base" -cf "$base.tmp" . && mv "$base.tmp" "$base"
  rm -rf "$work/base"
fi

# The README's follow-up lines: the block after "Then, on the index", each line as printed.
mapfile -t follow < <(awk '/^Then, on the index/ {f = 1} f && /^```sh/ {b = 1; next} b && /^```/ {exit} b {print}' README.md)
[ ${#follow[@]} -gt 0 ] || { echo "fresh-check: no follow-up lines found in README.md" >&2; exit 1; }

root=""
# Every process whose root is the fresh root (the README's server): ended before it is unmounted.
stop_processes() {
  [ -n "$root" ] || return 0
  local p r
  for p in /proc/[0-9]*; do
    r=$(readlink "$p/root" 2>/dev/null) || continue
    [ "$r" = "$root" ] && kill "${p#/proc/}" 2>/dev/null
  done
  sleep 1
  return 0
}
cleanup() {
  [ -n "$root" ] || return 0
  stop_processes
  for m in dev/pts dev/shm dev proc sys; do mountpoint -q "$root/$m" && umount -l "$root/$m"; done
  return 0
}
trap cleanup EXIT
fails=0
report=()
# run NAME LIMIT_SECONDS COMMAND: in the root's tree, as root with a login-like environment
run() {
  local name=$1 limit=$2 cmd=$3 t0 rc
  t0=$(date +%s)
  set +e
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /root/clsearch && $cmd" >"$log_dir/$name.log" 2>&1
  rc=$?
  set -e
  local took=$(($(date +%s) - t0))
  local verdict=ok
  if [ $rc != 0 ]; then verdict="FAILED (exit $rc)"; fails=1; fi
  if [ "$limit" -gt 0 ] && [ $took -gt "$limit" ]; then verdict="$verdict, over its ${limit} s"; fails=1; fi
  report+=("$(printf '%-16s %-60.60s %5d s  exit %3d  %s' "$order_name" "$cmd" "$took" "$rc" "$verdict")")
  printf '   %-60.60s %5d s  exit %3d  %s\n' "$cmd" "$took" "$rc" "$verdict"
  [ $rc = 0 ] || tail -15 "$log_dir/$name.log" | sed 's/^/      | /'
}

one_order() { # quickstart-first | tests-first
  order_name=$1
  root=$work/root-$1
  log_dir=$work/logs-$1
  cleanup
  rm -rf "$root" "$log_dir"
  mkdir -p "$root" "$log_dir"
  tar -C "$root" -xf "$base"
  mkdir -p "$root/root/clsearch" "$root/root/shared"
  git -C "$src" archive --format=tar HEAD | tar -C "$root/root/clsearch" -x
  touch "$work/copied-$1" # what the commands write into the tree is newer
  [ -d ../shared ] && cp -rL ../shared/. "$root/root/shared/"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # This host's own trust settings, where it reaches the network through a TLS-inspecting proxy:
  # its extra CA certificates (update-ca-certificates takes them in when deps.sh installs
  # ca-certificates) and pip's certificate setting. A machine without them copies nothing.
  if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  fi
  [ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
  local size
  size=$(du -sh "$root" 2>/dev/null | cut -f1)
  mount -t proc proc "$root/proc"
  mount --rbind /sys "$root/sys"
  mount --bind /dev "$root/dev"
  mount --bind /dev/pts "$root/dev/pts"
  mountpoint -q "$root/dev/shm" || mount -t tmpfs tmpfs "$root/dev/shm"
  echo "== $1: a fresh root ($size), the tree at $(git -C "$src" rev-parse --short HEAD), ../shared beside it"
  if [ "$1" = quickstart-first ]; then
    run quickstart 300 "tools/quickstart.sh"
    run tests 1800 "tools/test.sh"
  else
    run tests 1800 "tools/test.sh"
    run quickstart 300 "tools/quickstart.sh"
  fi
  echo "   the README's follow-up lines, one at a time:"
  local i=0
  for line in "${follow[@]}"; do
    i=$((i + 1))
    run "follow$i" 120 "$line" # a server started in the background stays up for the next lines
  done
  stop_processes
  # the source tree stays clean through all of it (outputs under build/ only, which git ignores)
  local dirty
  dirty=$(cd "$root/root/clsearch" && find . -path ./build -prune -o -path ./build-asan -prune -o -path ./build-tsan -prune \
            -o -path ./build-fuzz -prune -o -newer "$work/copied-$1" -type f -print 2>/dev/null | head -5) || true
  if [ -n "$dirty" ]; then
    echo "   the source tree gained files: $dirty"
    fails=1
  else
    echo "   the source tree outside build*/ is as it was copied"
  fi
  cleanup
}

case $order in
  both) one_order quickstart-first; one_order tests-first ;;
  quickstart-first|tests-first) one_order "$order" ;;
  *) echo "fresh-check: --order quickstart-first, tests-first or both" >&2; exit 2 ;;
esac
echo "== fresh-check on $(uname -m), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%s\n' "${report[@]}"
[ $fails = 0 ] && echo "fresh-check: every command passed in time" || echo "fresh-check: FAILED"
exit $fails

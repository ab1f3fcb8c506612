#!/usr/bin/env bash
# The fresh-machine check: the README's two commands, from a clean clone of
# this repository's HEAD, inside a clean Debian bookworm root made by
# `debootstrap --variant=minbase` (no compiler, no Python, nothing this
# machine has installed by hand). Run it as root whenever a change touches
# setup, CMake or dependencies; it is too slow for every CI run (about an
# hour on 2 cores). Results go in docs/fresh_check.md.
#
#   sudo bash scripts/fresh_check.sh [WORKDIR]     (default /var/tmp/amptrain-fresh)
#   KEEP=1   keep the root afterwards (default: removed on success)
#   EPOCHS=N passed to the main job (default: the main job's own default)
#
# The root's apt mirror is the one this machine's apt uses. Commands run
# with a clean environment (env -i), so nothing of this shell (PATH entries,
# pip settings, pyenv) leaks in.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
[ "$(id -u)" -eq 0 ] || { echo "fresh_check: must run as root (debootstrap, chroot, mount)" >&2; exit 1; }
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }

WORK=${1:-/var/tmp/amptrain-fresh}
ROOT=$WORK/root
LOG=$WORK/fresh_check.log
mkdir -p "$WORK"
: > "$LOG"
say() { echo "fresh_check: $*" | tee -a "$LOG"; }

mirror() {  # the first bookworm mirror of this machine's apt configuration
  local m=""
  if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
    m=$(awk '/^URIs:/ {u=$2} /^Suites:/ && /bookworm( |$)/ {print u; exit}' /etc/apt/sources.list.d/*.sources)
  fi
  if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
    m=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list)
  fi
  [ -n "$m" ] || { echo "fresh_check: no bookworm mirror in /etc/apt" >&2; exit 1; }
  echo "$m"
}

unmount_all() {
  for m in "$ROOT/dev/pts" "$ROOT/dev" "$ROOT/sys" "$ROOT/proc"; do
    mountpoint -q "$m" 2>/dev/null && umount -l "$m" || true
  done
}
trap unmount_all EXIT

t0=$(date +%s)
if [ -d "$ROOT" ]; then
  unmount_all
  rm -rf "$ROOT"
fi
MIRROR=$(mirror)
say "debootstrap --variant=minbase bookworm into $ROOT"
debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >> "$LOG" 2>&1
# The same package sources (main, updates, security) as a stock install.
SECURITY=$(awk '/^URIs:/ {u=$2} /^Suites:/ && /bookworm-security/ {print u; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
{
  echo "deb $MIRROR bookworm main"
  echo "deb $MIRROR bookworm-updates main"
  [ -n "$SECURITY" ] && echo "deb $SECURITY bookworm-security main"
} > "$ROOT/etc/apt/sources.list"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# This machine's network trust settings, which every machine of its kind has:
# local CA certificates (installed into the root's store when setup.sh's apt
# step brings ca-certificates) and pip's configuration (which CA bundle it
# uses). Nothing else of this machine goes in.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$ROOT/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
fi
[ -f /etc/pip.conf ] && cp /etc/pip.conf "$ROOT/etc/pip.conf"
mount -t proc proc "$ROOT/proc"
mount -t sysfs sys "$ROOT/sys"
mount --bind /dev "$ROOT/dev"
mount --bind /dev/pts "$ROOT/dev/pts"
t1=$(date +%s)

# A clean clone of HEAD (what a user gets), made from outside: git is one of
# the things setup.sh installs, so the root starts without it.
git clone -q --no-local "$REPO" "$ROOT/root/amptrain"
say "clone of $(git -C "$REPO" rev-parse --short HEAD) in /root/amptrain"

in_root() {
  chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin ${EPOCHS:+EPOCHS=$EPOCHS} \
    /bin/bash -c "cd /root/amptrain && $1"
}

status=0
say "README command 1: bash scripts/main_job.sh"
if in_root "bash scripts/main_job.sh" >> "$LOG" 2>&1; then main_rc=0; else main_rc=$?; status=1; fi
t2=$(date +%s)
say "main job: rc $main_rc, $((t2 - t1)) s"
say "README command 2: bash scripts/test.sh"
if in_root "bash scripts/test.sh" >> "$LOG" 2>&1; then test_rc=0; else test_rc=$?; status=1; fi
t3=$(date +%s)
say "test command: rc $test_rc, $((t3 - t2)) s"

# The ctest summaries and every skip with its reason (test.sh's skip lists).
: > "$LOG.summary"
grep -E "tests passed|tests failed|Total Test time" "$LOG" | tee -a "$LOG.summary" || true
awk '/^== skipped/ {on = 1; print; next} !/^  / {on = 0} on' "$LOG" | tee -a "$LOG.summary" || true
say "debootstrap $((t1 - t0)) s, main job $((t2 - t1)) s, tests $((t3 - t2)) s, total $((t3 - t0)) s"
say "log: $LOG"
unmount_all
if [ "$status" -eq 0 ] && [ -z "${KEEP:-}" ]; then rm -rf "$ROOT"; fi
exit "$status"

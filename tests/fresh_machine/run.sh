#!/usr/bin/env bash
# make fresh-check: README's set-up, typed on a fresh Debian 12 machine that holds only what
# README asks for, as a user with sudo. Exits 0 only when `make demo` ends with every sample
# student graded as their story predicts.
#
#   tests/fresh_machine/run.sh [--head] [--as user|root|both] [--test-setup] [--keep] [CHECKOUT]
#   tests/fresh_machine/run.sh --print-commands [CHECKOUT]   (README's commands it types; no root)
#
# CHECKOUT (default: the repository this script is in) is cloned at its HEAD; without --head,
# its uncommitted changes and untracked files (those git does not ignore) are copied over the
# clone, so a working tree is checked as it is. --as: who types the commands (default user: `dev`,
# with passwordless sudo; root: root; both: one after the other, each in its own clone).
# --test-setup: then also `make test-setup` (what `make test` installs and starts before its
# tests; not the suite itself). --keep: leave the machine's root under build/fresh-machine/.
#
# The machine: `mmdebstrap --variant=minbase` of bookworm with README's requirements (below),
# cached as a tarball in build/fresh-machine/ (a rerun skips the bootstrap, about a minute) and
# unpacked afresh for every run. This machine's pip and CA configuration is copied in (pip then
# reaches the same registry); the local package folders that configuration names are bound
# read-only. The root is entered in new mount and PID namespaces with pivot_root, not chroot: the
# grader's sandbox (bwrap) makes user namespaces, which the kernel refuses to a chrooted process,
# and sudo must work (bwrap as the way in would set no_new_privs, which disables sudo). Every
# process started inside (PostgreSQL, say) ends with the run. Needs root and Linux namespaces.
set -euo pipefail
# (all in one block, which bash reads whole before it runs it: editing this file while a check
# runs cannot change what that run does next)
{
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=$REPO/build/fresh-machine
SUITE=bookworm
# README, "Requirements" and "Set-up": "a fresh Debian or Ubuntu machine with Python 3.11, `make`
# and a C compiler". On Debian 12: python3 (3.11.2), make, gcc with libc6-dev (which gcc
# recommends; without it gcc cannot compile a program). README does not name them, but a
# checkout needs git (and ca-certificates for https); sudo is how the user installs packages.
PACKAGES=python3,make,gcc,libc6-dev,git,ca-certificates,sudo
USER_NAME=dev
DEMO_OK="Every sample student got the score their story predicts."

# readme_commands README: README's set-up commands, as README gives them: the lines of the first
# ```bash block after "## Set-up".
readme_commands() {
    awk '/^## Set-up/{s=1} s&&/^```bash/{b=1;next} b&&/^```/{exit} b' "$1"
}

head_only="" as=user test_setup="" keep="" checkout=$REPO print_commands=""
while [ $# -gt 0 ]; do
    case $1 in
        --print-commands) print_commands=1 ;;
        --head) head_only=1 ;;
        --as) as=$2; shift ;;
        --test-setup) test_setup=1 ;;
        --keep) keep=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
        *) checkout=$1 ;;
    esac
    shift
done
case $as in user|root|both) ;; *) echo "--as takes user, root or both" >&2; exit 2 ;; esac
checkout=$(cd "$checkout" && pwd)
if [ -n "$print_commands" ]; then readme_commands "$checkout/README.md"; exit 0; fi
[ "$(id -u)" = 0 ] || { echo "fresh-check needs root (it bootstraps a Debian root and mounts in" \
    "it): sudo make fresh-check" >&2; exit 2; }
command -v mmdebstrap >/dev/null || sh "$REPO/requirements/apt-need" "make fresh-check" mmdebstrap

started=$(date +%s)
say() { printf '[fresh-check %4ss] %s\n' "$(( $(date +%s) - started ))" "$*"; }
# step NAME COMMAND...: run it, print how long it took.
step() {
    local name=$1 t0 rc=0; shift
    t0=$(date +%s)
    say "$name ..."
    "$@" || rc=$?
    say "$name: $(( $(date +%s) - t0 )) s$([ $rc = 0 ] || echo ", FAILED (exit status $rc)")"
    return $rc
}

mkdir -p "$CACHE"
key=$(printf '%s %s %s' "$SUITE" "$PACKAGES" "$(mmdebstrap --version)" | sha256sum | cut -c1-12)
tarball=$CACHE/$SUITE-minbase-$key.tar
bootstrap() {
    mmdebstrap --quiet --variant=minbase --include="$PACKAGES" "$SUITE" "$tarball.part" &&
        mv "$tarball.part" "$tarball"
}
if [ -f "$tarball" ]; then say "Debian $SUITE root: cached ($tarball)"
else step "bootstrap Debian $SUITE minbase + $PACKAGES (mmdebstrap)" bootstrap; fi

root=$(mktemp -d "$CACHE/root.XXXXXX")
logs=$CACHE/logs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$logs"
mounted_below() { grep -qF " $root/" /proc/self/mountinfo || grep -qF " $root " /proc/self/mountinfo; }
cleanup() {
    if [ -n "$keep" ]; then say "kept the machine's root: $root"
    elif mounted_below; then say "NOT removing $root: something is still mounted there"
    else rm -rf "$root"; fi
}
trap cleanup EXIT
step "unpack a pristine root" tar -xf "$tarball" -C "$root"

# pip's configuration, and what it points at: files are copied, local folders bound read-only.
binds=()
configure() {
    cp /etc/resolv.conf "$root/etc/resolv.conf" || return
    # /etc/hosts as Debian's installer writes it (mmdebstrap writes none; without localhost,
    # PostgreSQL cannot listen), with this machine's host name (the root shares it)
    printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
        "$(hostname)" > "$root/etc/hosts" || return
    if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
        cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt" || return
    fi
    if [ -f /etc/pip.conf ]; then cp /etc/pip.conf "$root/etc/pip.conf" || return; fi
    if [ -d /etc/xdg/pip ]; then
        mkdir -p "$root/etc/xdg" && cp -r /etc/xdg/pip "$root/etc/xdg/pip" || return
    fi
    chroot "$root" useradd --create-home --shell /bin/bash "$USER_NAME" || return
    echo "$USER_NAME ALL=(ALL:ALL) NOPASSWD: ALL" > "$root/etc/sudoers.d/$USER_NAME" &&
        chmod 440 "$root/etc/sudoers.d/$USER_NAME" || return
    local conf home
    for conf in "${PIP_CONFIG_FILE:-}" "$HOME/.config/pip/pip.conf" "$HOME/.pip/pip.conf"; do
        [ -n "$conf" ] && [ -f "$conf" ] || continue
        for home in root "home/$USER_NAME"; do
            mkdir -p "$root/$home/.config/pip" && cp "$conf" "$root/$home/.config/pip/pip.conf" ||
                return
        done
        chroot "$root" chown -R "$USER_NAME:$USER_NAME" "/home/$USER_NAME/.config" || return
        break
    done
    local value path
    for value in $( { env | sed -n 's/^PIP_[A-Z_]*=//p'; pip config list 2>/dev/null |
                      sed -n "s/^[^=]*='\(.*\)'$/\1/p"; } | tr ' ' '\n' | sort -u); do
        path=${value#file://}
        case $path in /*) ;; *) continue ;; esac
        if [ -d "$path" ]; then
            if [ "$(basename "$path")" = simple ]; then path=$(dirname "$path"); fi  # ../files
            case " ${binds[*]} " in *" $path "*) ;; *) binds+=("$path") ;; esac
        elif [ -f "$path" ] && [ ! -e "$root$path" ]; then
            mkdir -p "$root$(dirname "$path")" && cp "$path" "$root$path" || return
        fi
    done
    say "pip: $(env | grep -c '^PIP_') PIP_* variables; bound read-only: ${binds[*]:-nothing}"
}
step "configure the machine (user $USER_NAME with sudo, pip and CA configuration)" configure

# The PIP_* variables of this shell, passed to the commands typed inside.
pip_env=()
while IFS= read -r line; do pip_env+=("$line"); done < <(env | grep '^PIP_' || true)

# enter COMMAND...: run COMMAND as root inside the machine (its own mount and PID namespaces).
enter() {
    unshare --mount --pid --fork --propagation private -- /bin/bash -s "$root" "$@" <<'ENTER'
set -e
r=$1; shift
mount --bind "$r" "$r"
mount -t proc proc "$r/proc"
mount --rbind /sys "$r/sys" && mount --make-rslave "$r/sys"
mount --rbind /dev "$r/dev" && mount --make-rslave "$r/dev"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$r/dev/shm"
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$r/run"
for d in $BINDS; do
    mkdir -p "$r$d" && mount --bind "$d" "$r$d" && mount -o remount,bind,ro "$r$d"
done
cd "$r" && mkdir -p .oldroot && pivot_root . .oldroot
cd / && umount -l /.oldroot && rmdir /.oldroot
exec "$@"
ENTER
}
export BINDS="${binds[*]}"

# put_checkout DEST OWNER: the checkout cloned at its HEAD into the machine (plus its working
# tree's changes unless --head), owned by OWNER.
put_checkout() {
    local dest=$root$1 owner=$2
    git clone --quiet --no-hardlinks "$checkout" "$dest" || return
    if [ -z "$head_only" ]; then
        git -C "$checkout" ls-files -z --deleted | (cd "$dest" && xargs -0r rm -f --) || return
        git -C "$checkout" ls-files -z -co --exclude-standard |
            while IFS= read -r -d '' f; do [ -e "$checkout/$f" ] && printf '%s\0' "$f"; done |
            tar -C "$checkout" --null -T - -cf - | tar -C "$dest" -xf - || return
    fi
    chroot "$root" chown -R "$owner:$owner" "$1"
}
describe() {
    say "checkout: $checkout at $(git -C "$checkout" rev-parse --short HEAD)$(
        [ -n "$head_only" ] && echo " (HEAD only)" || {
        n=$(git -C "$checkout" status --porcelain | wc -l); echo " + its working tree ($n changed or untracked paths)"; })"
}
describe

mapfile -t readme < <(readme_commands "$checkout/README.md")
[ ${#readme[@]} -gt 0 ] || { say "README.md has no \`\`\`bash block under '## Set-up'"; exit 2; }
say "README's set-up commands: $(printf '[%s] ' "${readme[@]}")"
demo_line=$(printf '%s\n' "${readme[@]}" | grep -m1 '^make demo') || {
    say "README's set-up block has no 'make demo' line"; exit 2; }

# type_as WHO LINE LOG: type LINE in WHO's clone, in a login shell with this machine's PIP_* set.
type_as() {
    local who=$1 line=$2 log=$3 home dir
    if [ "$who" = root ]; then home=/root; else home=/home/$who; fi
    dir=$home/attention
    enter /usr/sbin/runuser -u "$who" -- /usr/bin/env -i HOME="$home" USER="$who" LOGNAME="$who" \
        PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin LANG=C.UTF-8 \
        TERM=dumb "${pip_env[@]}" /bin/bash -lc "cd $dir && $line" 2>&1 | stamp > "$log"
}
# stamp: each line with the seconds since the command started (the log then shows how long the
# apt-get, pip and grading parts took).
stamp() {
    local t0=$SECONDS line
    while IFS= read -r line; do printf '[%4ss] %s\n' $((SECONDS - t0)) "$line"; done
}

verdict=0
run_as() {
    local who=$1 home
    if [ "$who" = root ]; then home=/root; else home=/home/$who; fi
    step "clone the checkout into $home/attention" put_checkout "$home/attention" "$who"
    local rc=0
    step "$who types: $demo_line" type_as "$who" "$demo_line" "$logs/$who-demo.log" || rc=$?
    say "the demo's last lines ($logs/$who-demo.log):"
    tail -n 25 "$logs/$who-demo.log" | sed 's/^/    | /'
    if [ $rc = 0 ] && grep -qE "^\[ *[0-9]+s\] $DEMO_OK\$" "$logs/$who-demo.log"; then
        say "PASS ($who): make demo graded every sample student as predicted"
    else
        say "FAIL ($who): make demo exited $rc$(grep -qE "^\[ *[0-9]+s\] $DEMO_OK\$" "$logs/$who-demo.log" ||
            echo ", without '$DEMO_OK'")"
        verdict=1
    fi
    if [ -n "$test_setup" ]; then
        step "$who types: make test-setup" type_as "$who" "make test-setup" "$logs/$who-test-setup.log" ||
            { verdict=1; tail -n 25 "$logs/$who-test-setup.log" | sed 's/^/    | /'; }
    fi
}

if [ "$as" = user ] || [ "$as" = both ]; then run_as "$USER_NAME"; fi
if [ "$as" = root ] || [ "$as" = both ]; then run_as root; fi
say "total: $(( $(date +%s) - started )) s; logs in $logs"
exit $verdict
}

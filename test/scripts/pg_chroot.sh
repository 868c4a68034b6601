#!/usr/bin/env bash
# A Debian chroot with another PostgreSQL major version, for test/ci.sh (as
# root).  Debian 12 ships only PostgreSQL 15; its archive also serves
# trixie (PostgreSQL 17) and sid (PostgreSQL 18) with their
# postgresql-server-dev-NN, so the other servers are built from Debian's
# own packages in a debootstrap chroot:
#
#   pg_chroot.sh setup DIR CODENAME PGVERSION
#       debootstrap --variant=minbase CODENAME into DIR from the mirror the
#       machine's apt uses, mount /proc and a /dev/shm there, and install the
#       server, its headers and the build and test packages; DIR/.adk-ready
#       marks a finished setup
#   pg_chroot.sh mount DIR     mount /proc and /dev/shm (again)
#   pg_chroot.sh umount DIR    stop what still runs inside DIR, unmount
#   pg_chroot.sh user DIR      add the host's user adkci (same uid) to DIR
#
# Nothing is started in the chroot by the packages: policy-rc.d denies
# service starts and postgresql-common creates no "main" cluster.
set -euo pipefail

PACKAGES_FOR() {  # pg version: the packages the build and the suites need (curl:
    # regression tests read the model server's /_last with COPY FROM PROGRAM)
    echo "postgresql-$1 postgresql-server-dev-$1 libcurl4-openssl-dev libjson-c-dev" \
        "libipc-run-perl make gcc pkg-config python3 curl"
}

# The Debian mirror of the machine's apt sources (one-line or deb822), so
# that the chroot comes from where the machine's own packages come from.
host_mirror() {
    local uri
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
        sed -nE 's/^URIs:[[:space:]]*(\S+).*/\1/p; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?(\S+).*/\2/p' |
        grep -E '/debian/?$' | head -n 1 || true)
    [ -n "$uri" ] || { echo "pg_chroot: no Debian mirror in the machine's apt sources" >&2; return 1; }
    echo "$uri"
}

do_mount() {
    local dir=$1
    mountpoint -q "$dir/proc" || mount -t proc proc "$dir/proc"
    # PostgreSQL's dynamic shared memory (posix) lives in /dev/shm
    mkdir -p "$dir/dev/shm"
    mountpoint -q "$dir/dev/shm" || mount -t tmpfs -o mode=1777,size=512m shm "$dir/dev/shm"
}

do_umount() {
    local dir p
    dir=$(cd "$1" && pwd -P)
    # processes of a failed suite (a server, the model server) still inside
    # the chroot keep its mounts busy: they were all started by this run
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$dir" ] && kill -KILL "${p#/proc/}" 2>/dev/null
    done
    sleep 0.2
    for m in dev/shm proc; do
        mountpoint -q "$dir/$m" && { umount "$dir/$m" || umount -l "$dir/$m"; }
    done
    return 0
}

do_user() {
    local dir=$1 uid gid
    uid=$(id -u adkci)
    gid=$(id -g adkci)
    grep -q '^adkci:' "$dir/etc/group" || echo "adkci:x:$gid:" >>"$dir/etc/group"
    grep -q '^adkci:' "$dir/etc/passwd" ||
        echo "adkci:x:$uid:$gid::/home/adkci:/bin/bash" >>"$dir/etc/passwd"
    mkdir -p "$dir/home/adkci"
    chown adkci:adkci "$dir/home/adkci"
}

do_setup() {
    local dir=$1 codename=$2 ver=$3 mirror t0 apt_opts=()
    mirror=$(host_mirror)
    t0=$SECONDS
    echo "debootstrap --variant=minbase $codename $dir $mirror"
    debootstrap --variant=minbase "$codename" "$dir" "$mirror" >"$dir.debootstrap.log" 2>&1 ||
        { tail -n 30 "$dir.debootstrap.log"; return 1; }
    echo "debootstrap: $((SECONDS - t0)) s"
    do_mount "$dir"
    printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
    chmod 755 "$dir/usr/sbin/policy-rc.d"
    mkdir -p "$dir/etc/postgresql-common"
    echo "create_main_cluster = false" >"$dir/etc/postgresql-common/createcluster.conf"
    # the archive's sid Release file may be past its Valid-Until date
    [ "$codename" = sid ] && apt_opts=(-o Acquire::Check-Valid-Until=false)
    t0=$SECONDS
    chroot "$dir" apt-get -qq "${apt_opts[@]}" update
    # shellcheck disable=SC2046
    chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        $(PACKAGES_FOR "$ver") >"$dir.apt.log" 2>&1 ||
        { tail -n 30 "$dir.apt.log"; return 1; }
    chroot "$dir" "/usr/lib/postgresql/$ver/bin/pg_config" --version
    chroot "$dir" pkg-config --modversion json-c | sed 's/^/json-c /'
    echo "packages: $((SECONDS - t0)) s"
    touch "$dir/.adk-ready"
}

cmd=${1:?usage: pg_chroot.sh setup|mount|umount|user DIR ...}
shift
case $cmd in
setup) do_setup "$@" ;;
mount) do_mount "$@" ;;
umount) do_umount "$@" ;;
user) do_user "$@" ;;
*)
    echo "pg_chroot.sh: unknown command $cmd" >&2
    exit 2
    ;;
esac

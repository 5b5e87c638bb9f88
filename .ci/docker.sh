#!/usr/bin/env bash
# Make a working Docker engine and a local `debian:bookworm-slim` base image.
#
# Idempotent: every step is skipped when its result already exists, so a warm
# run costs well under a second. Works as root on a fresh Debian 12 machine
# with no systemd and no Docker Hub (only the Debian mirror is reachable):
#   1. docker.io (+ docker-compose 1.29) from Debian when dockerd is missing,
#   2. dockerd started detached when `docker info` fails (never a second one),
#   3. debian:bookworm-slim built with debootstrap + `docker import` when the
#      image is missing.
# Environment knobs (all optional):
#   FETCH_DEBIAN_MIRROR    mirror for debootstrap (default: from apt sources)
#   FETCH_DEBIAN_SECURITY  security mirror written into the image's sources
#   FETCH_BASE_IMAGE       tag to create (default debian:bookworm-slim)
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive
BASE_IMAGE="${FETCH_BASE_IMAGE:-debian:bookworm-slim}"
SUITE=bookworm

t_start=$EPOCHREALTIME
log() { printf '[docker.sh] %s\n' "$*" >&2; }
since() { # seconds since $1 (an EPOCHREALTIME value), 2 decimals
    awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'
}

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO=(sudo -n); else SUDO=(); fi
fi

apt_updated=0
apt_install() {
    local t=$EPOCHREALTIME
    if [ "$apt_updated" -eq 0 ]; then
        log "apt-get update"
        "${SUDO[@]}" apt-get update -qq
        apt_updated=1
    fi
    log "apt-get install $*"
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "$@" >/dev/null
    log "installed $* in $(since "$t") s"
}

docker_ok() { docker info >/dev/null 2>&1; }

dockerd_running() {
    # An existing daemon: a live pid in its pidfile, or a process named dockerd.
    if [ -s /var/run/docker.pid ] && kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
        return 0
    fi
    pgrep -x dockerd >/dev/null 2>&1
}

# ---------------------------------------------------------------- 1. packages
pkgs=()
command -v dockerd >/dev/null 2>&1 || pkgs+=(docker.io)
# The Debian package also brings /usr/bin/docker; a client elsewhere is fine.
command -v docker >/dev/null 2>&1 || pkgs+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || pkgs+=(docker-compose)
if [ "${#pkgs[@]}" -gt 0 ]; then
    # de-duplicate
    mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
    apt_install "${pkgs[@]}"
fi

# ------------------------------------------------------------------ 2. daemon
if docker_ok; then
    :
else
    t=$EPOCHREALTIME
    if dockerd_running; then
        log "dockerd is already running; waiting for it to answer"
    else
        log "starting dockerd (log: /var/log/dockerd.log)"
        # setsid + closed stdio: the daemon must not hold our pipes open.
        "${SUDO[@]}" setsid dockerd >/var/log/dockerd.log 2>&1 </dev/null &
        disown || true
    fi
    for _ in $(seq 1 300); do
        docker_ok && break
        sleep 0.1
    done
    if ! docker_ok; then
        log "docker info still fails after 30 s; tail of /var/log/dockerd.log:"
        tail -n 30 /var/log/dockerd.log >&2 || true
        exit 1
    fi
    log "dockerd ready in $(since "$t") s"
fi

# -------------------------------------------------------------- 3. base image
if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    log "all present ($BASE_IMAGE exists); done in $(since "$t_start") s"
    exit 0
fi

# Mirrors: the ones apt on this machine uses (or FETCH_DEBIAN_MIRROR); no host is named here.
apt_uris() {
    # URIs of enabled sources (deb822 .sources and one-line .list files).
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; break } }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }' "$f"
    done
}
uris="$(apt_uris 2>/dev/null || true)"
MIRROR="${FETCH_DEBIAN_MIRROR:-$(printf '%s\n' "$uris" | grep -E '/debian/?$' | head -n1 || true)}"
[ -n "$MIRROR" ] || { log "no Debian mirror in apt's sources: set FETCH_DEBIAN_MIRROR"; exit 1; }
MIRROR="${MIRROR%/}"
SECURITY="${FETCH_DEBIAN_SECURITY:-$(printf '%s\n' "$uris" | grep -E '/debian-security/?$' | head -n1 || true)}"
SECURITY="${SECURITY:-${MIRROR%/debian}/debian-security}"  # the same host's, by convention
SECURITY="${SECURITY%/}"

command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap

WORK="$(mktemp -d /var/tmp/fetch-rootfs.XXXXXX)"
cleanup() { "${SUDO[@]}" rm -rf "$WORK"; }
trap cleanup EXIT
ROOTFS="$WORK/rootfs"

t=$EPOCHREALTIME
log "debootstrap --variant=minbase $SUITE from $MIRROR"
if ! "${SUDO[@]}" debootstrap --variant=minbase "$SUITE" "$ROOTFS" "$MIRROR" \
        >"$WORK/debootstrap.log" 2>&1; then
    tail -n 30 "$WORK/debootstrap.log" >&2
    [ -f "$ROOTFS/debootstrap/debootstrap.log" ] && tail -n 30 "$ROOTFS/debootstrap/debootstrap.log" >&2
    exit 1
fi
log "debootstrap took $(since "$t") s"

# Slim it like the official -slim images: no docs, man pages or locales now
# or in later `apt-get install`s; no apt lists or caches in the image.
t=$EPOCHREALTIME
"${SUDO[@]}" bash -s "$ROOTFS" "$SUITE" "$MIRROR" "$SECURITY" <<'EOS'
set -euo pipefail
R="$1"; SUITE="$2"; MIRROR="$3"; SECURITY="$4"
cat >"$R/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
cat >"$R/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
cat >"$R/etc/apt/apt.conf.d/docker-no-languages" <<'EOF'
Acquire::Languages "none";
EOF
rm -f "$R/etc/apt/sources.list"
cat >"$R/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
find "$R/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
find "$R/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
rm -rf "$R/usr/share/man/"* "$R/usr/share/info/"* "$R/usr/share/groff/"* \
       "$R/usr/share/lintian/"* "$R/usr/share/linda/"*
find "$R/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} + 2>/dev/null || true
rm -rf "$R/var/lib/apt/lists/"* "$R/var/cache/apt/"*.bin "$R/var/cache/apt/archives/"*.deb \
       "$R/var/log/"*.log "$R/var/log/apt/"* "$R/debootstrap" "$R/tmp/"* "$R/root/.bash_history"
# The container runtime provides /dev, /proc and /sys.
rm -rf "$R/dev/"* "$R/proc/"* "$R/sys/"*
: >"$R/etc/machine-id" 2>/dev/null || true
rm -f "$R/etc/hostname" "$R/etc/resolv.conf"
EOS
log "trimmed rootfs in $(since "$t") s ($(du -sh "$ROOTFS" | cut -f1))"

t=$EPOCHREALTIME
"${SUDO[@]}" tar --numeric-owner --xattrs -C "$ROOTFS" -c . \
    | docker import -c 'CMD ["bash"]' -m "debootstrap --variant=minbase $SUITE (.ci/docker.sh)" - "$BASE_IMAGE" >/dev/null
log "imported $BASE_IMAGE in $(since "$t") s ($(docker image inspect -f '{{.Size}}' "$BASE_IMAGE" | awk '{ printf "%.0f MB", $1 / 1e6 }'))"
log "done in $(since "$t_start") s"

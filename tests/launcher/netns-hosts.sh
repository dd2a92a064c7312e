#!/bin/sh
# Two "hosts" on one machine: network namespaces <prefix>-hostA and
# <prefix>-hostB joined by a veth pair. In each, the pair's end is named
# hvd0 and loopback is up:
#
#   <prefix>-hostA  hvd0 10.99.0.1/24  <--veth-->  hvd0 10.99.0.2/24  <prefix>-hostB
#
# Traffic flows only between the two namespaces (and each one's loopback);
# nothing is routed to or from the machine's own network.
#
#   netns-hosts.sh up PREFIX      create (fails if they exist); needs root
#   netns-hosts.sh down PREFIX    delete both (missing ones are ignored)
#   netns-hosts.sh check          exit 0 if namespaces can be created here
#
# Run a command on a host with `ip netns exec PREFIX-hostA CMD`; horovodrun
# takes --launcher-command 'ip netns exec PREFIX-{host} sh -c {command}'.
set -eu

usage() {
  echo "usage: $0 up PREFIX | down PREFIX | check" >&2
  exit 2
}

down() {
  ip netns delete "$1-hostA" 2>/dev/null || true
  ip netns delete "$1-hostB" 2>/dev/null || true
}

link_pair() {
  prefix=$1
  ip netns add "$prefix-hostB" || return 1
  ip link add hvd0 netns "$prefix-hostA" type veth \
    peer name hvd0 netns "$prefix-hostB" || return 1
  ip -n "$prefix-hostA" addr add 10.99.0.1/24 dev hvd0 || return 1
  ip -n "$prefix-hostB" addr add 10.99.0.2/24 dev hvd0 || return 1
  for host in hostA hostB; do
    ip -n "$prefix-$host" link set lo up || return 1
    ip -n "$prefix-$host" link set hvd0 up || return 1
  done
}

up() {
  ip netns add "$1-hostA"
  if ! link_pair "$1"; then
    down "$1"
    echo "$0: could not set up the namespaces $1-hostA and $1-hostB" >&2
    exit 1
  fi
  echo "$1-hostA hvd0 10.99.0.1"
  echo "$1-hostB hvd0 10.99.0.2"
}

check() {
  probe="hvdcheck$$"
  ip netns add "$probe" 2>/dev/null || exit 1
  ip netns delete "$probe"
}

[ $# -ge 1 ] || usage
case "$1" in
  up) [ $# -eq 2 ] || usage; up "$2" ;;
  down) [ $# -eq 2 ] || usage; down "$2" ;;
  check) check ;;
  *) usage ;;
esac

#!/bin/sh
# Two to four "hosts" on one machine: network namespaces <prefix>-hostA,
# <prefix>-hostB, ... In each, loopback is up and one veth end named hvd0
# has the address 10.99.0.<i>/24 (hostA .1, hostB .2, ...).
#
# Two hosts are joined by one veth pair. More hosts each get a veth pair to
# a bridge in a namespace of its own, <prefix>-switch:
#
#   <prefix>-hostA  hvd0 10.99.0.1/24  <--veth-->  hvd0 10.99.0.2/24  <prefix>-hostB
#   <prefix>-hostX  hvd0 10.99.0.i/24  <--veth-->  pX  [br0 in <prefix>-switch]
#
# Traffic flows only between the namespaces (and each one's loopback);
# nothing is routed to or from the machine's own network.
#
#   netns-hosts.sh up PREFIX [HOSTS]   create HOSTS (2..4, default 2) hosts
#                                      (fails if they exist); needs root
#   netns-hosts.sh down PREFIX         delete them (missing ones are ignored)
#   netns-hosts.sh check               exit 0 if namespaces can be made here
#
# Run a command on a host with `ip netns exec PREFIX-hostA CMD`; horovodrun
# takes --launcher-command 'ip netns exec PREFIX-{host} sh -c {command}'.
set -eu

HOSTS="A B C D"

usage() {
  echo "usage: $0 up PREFIX [2|3|4] | down PREFIX | check" >&2
  exit 2
}

down() {
  for h in $HOSTS; do
    ip netns delete "$1-host$h" 2>/dev/null || true
  done
  ip netns delete "$1-switch" 2>/dev/null || true
}

# The first $2 host letters.
letters() {
  echo "$HOSTS" | cut -d' ' -f"1-$1"
}

link_pair() {
  prefix=$1
  ip link add hvd0 netns "$prefix-hostA" type veth \
    peer name hvd0 netns "$prefix-hostB" || return 1
}

link_switch() {
  prefix=$1
  count=$2
  ip netns add "$prefix-switch" || return 1
  ip -n "$prefix-switch" link add br0 type bridge || return 1
  ip -n "$prefix-switch" link set br0 up || return 1
  for h in $(letters "$count"); do
    ip link add hvd0 netns "$prefix-host$h" type veth \
      peer name "p$h" netns "$prefix-switch" || return 1
    ip -n "$prefix-switch" link set "p$h" master br0 || return 1
    ip -n "$prefix-switch" link set "p$h" up || return 1
  done
}

link_hosts() {
  prefix=$1
  count=$2
  for h in $(letters "$count"); do
    ip netns add "$prefix-host$h" || return 1
  done
  if [ "$count" -eq 2 ]; then
    link_pair "$prefix" || return 1
  else
    link_switch "$prefix" "$count" || return 1
  fi
  i=1
  for h in $(letters "$count"); do
    ip -n "$prefix-host$h" addr add "10.99.0.$i/24" dev hvd0 || return 1
    ip -n "$prefix-host$h" link set lo up || return 1
    ip -n "$prefix-host$h" link set hvd0 up || return 1
    i=$((i + 1))
  done
}

up() {
  prefix=$1
  count=$2
  case "$count" in
    2 | 3 | 4) ;;
    *) echo "$0: HOSTS must be 2, 3 or 4, not $count" >&2; exit 2 ;;
  esac
  if ! link_hosts "$prefix" "$count"; then
    down "$prefix"
    echo "$0: could not set up $count namespaces $prefix-host*" >&2
    exit 1
  fi
  i=1
  for h in $(letters "$count"); do
    echo "$prefix-host$h hvd0 10.99.0.$i"
    i=$((i + 1))
  done
}

check() {
  probe="hvdcheck$$"
  ip netns add "$probe" 2>/dev/null || exit 1
  ip netns delete "$probe"
}

[ $# -ge 1 ] || usage
case "$1" in
  up)
    [ $# -eq 2 ] || [ $# -eq 3 ] || usage
    up "$2" "${3:-2}"
    ;;
  down) [ $# -eq 2 ] || usage; down "$2" ;;
  check) check ;;
  *) usage ;;
esac

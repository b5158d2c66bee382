#!/bin/bash
#   bench/profile/channels.sh BUILD [N] [ROUNDS]
# The broker's CPU per message consumed from a filled queue (QT=quorum by default) by 4 raw
# consumers, each on a connection of its own, against 4 consumers sharing one channel (as dde-mqs's
# consumers of one topic do). Alternating; prints the rate and the broker's µs a message.
# Sharing the channel costs the broker no more: 14-15 against 16-17 µs a message (this script with
# its defaults, 3 rounds, on 2 cores).
set -uo pipefail
build=$1 n=${2:-100000} rounds=${3:-3} qt=${QT:-quorum}
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=/tmp/chan-exp; rm -rf $dir; mkdir -p $dir
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$root/deploy/rabbitmq.sh start --dir $dir --port $port >/dev/null || exit 1
trap '$root/deploy/rabbitmq.sh stop --dir $dir >/dev/null 2>&1' EXIT
beam=$(pgrep -f "beam.smp.*$dir" | head -1)
raw=$build/bin/dde-raw-amqp
hz=$(getconf CLK_TCK)
for _ in $(seq "$rounds"); do
  for shape in "--connections 4" "--connections 1 --consumers-per-channel 4"; do
    $raw produce --port $port --queue q --queue-type $qt --count $n --size 64 --confirm-window 256 >/dev/null
    b0=$(awk '{print $14+$15}' /proc/$beam/stat)
    r=$($raw consume --port $port --queue q --queue-type $qt --count $n --prefetch 64 --multiple-ack $shape)
    b1=$(awk '{print $14+$15}' /proc/$beam/stat)
    echo "$shape: $(echo "$r" | grep -o 'rate=[0-9]*') broker_us=$(( (b1-b0)*1000000/hz/n ))"
  done
done

#!/bin/sh
# Record windowkit/datasets/data/remote_shell.strace: a few benign commands and one real bind
# shell on loopback (127.0.0.1 only), all under `strace -f -tt`. Needs strace and python3.
# Usage: sh record_trace.sh OUTPUT_FILE
set -eu
OUT=${1:-remote_shell.strace}
PORT=${PORT:-47311}
strace -f -tt -s 24 -o "$OUT" sh -c "
  ls / > /dev/null
  cat /etc/hostname > /dev/null
  date > /dev/null
  echo 'b a c' | tr ' ' '\n' | sort > /dev/null
  /usr/bin/python3 -I -S -c '
import os, socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((\"127.0.0.1\", $PORT))
s.listen(1)
c, _ = s.accept()
for fd in (0, 1, 2):
    os.dup2(c.fileno(), fd)
os.execv(\"/bin/sh\", [\"/bin/sh\"])
' &
  sleep 0.5
  /usr/bin/python3 -I -S -c '
import socket
c = socket.create_connection((\"127.0.0.1\", $PORT))
c.sendall(b\"echo pwned; id -u; exit\n\")
print(c.recv(100))
c.close()
'
  wait
  grep -c root /etc/passwd > /dev/null
"

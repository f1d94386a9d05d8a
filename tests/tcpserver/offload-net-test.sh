#!/bin/sh
# SPDX-License-Identifier: MIT
# offload-test.sh again, the hosts reaching tcpserverd over an esock QP (the
# cluster variant's transport: tcpserverd -l, ESOCK_TCPSERVER=ADDR:PORT).
TCPSERVER_TRANSPORT=net exec sh "$(dirname "$0")/offload-test.sh"

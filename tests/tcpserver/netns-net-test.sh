#!/bin/sh
# SPDX-License-Identifier: MIT
# netns-test.sh in the cluster variant's layout: nginx in a namespace of its own reaching
# tcpserverd over an esock QP (tcpserverd -l, ESOCK_TCPSERVER=ADDR:PORT).
TCPSERVER_TRANSPORT=net exec sh "$(dirname "$0")/netns-test.sh"

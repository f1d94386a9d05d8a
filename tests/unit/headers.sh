#!/bin/sh
# SPDX-License-Identifier: MIT
# Every installed header compiles on its own as C99 -pedantic and as C++,
# with no warnings: users include them one by one, in any order.
set -u
: "${top_srcdir:=.}"
CC=${CC:-cc}
CXX=${CXX:-c++}
fail=0 n=0
for h in "$top_srcdir"/include/esock/*.h; do
	name=esock/$(basename "$h")
	n=$((n + 1))
	printf '#include <%s>\nint esock_header_test_dummy;\n' "$name" |
		$CC -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$top_srcdir/include" -x c - ||
		{ echo "FAIL: $name as C99"; fail=1; }
	if command -v "$CXX" >/dev/null 2>&1; then
		printf '#include <%s>\nint esock_header_test_dummy;\n' "$name" |
			$CXX -std=c++11 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$top_srcdir/include" -x c++ - ||
			{ echo "FAIL: $name as C++"; fail=1; }
	else
		echo "FAIL: no C++ compiler ($CXX) to check $name"; fail=1
	fi
done
echo "checked $n headers"
[ "$n" -gt 0 ] && exit $fail
exit 1

# shellcheck shell=bash disable=SC2034  # sets variables for the scripts that source it
# Fault injection in the test VM (source after tests/lib.sh): failslab and
# fail_page_alloc through debugfs with a stack filter, and the writing task's
# /proc/<pid>/fail-nth. tests/fault.py does the address work.
#
# Two ways to fail "the N-th allocation made with the client on the stack":
#  * task: fi_nth_write sets this shell's fail-nth to N and writes a sysfs
#    file; the N-th allocation in that write that passes the stack filter
#    fails. Only the writing task is reached.
#  * any context (work, CM handler, completion): fi_arm sets one attribute
#    (failslab or fail_page_alloc) to fail the N-th call that passes its
#    filters, wherever it comes from. The attribute fails a call when its
#    hidden counter reaches a multiple of `interval`. That counter cannot be
#    read or reset, and an earlier test of this boot (72's every k-th call)
#    or a run that did not fire leaves it anywhere: fi_arm first makes it a
#    multiple of N (fault.py resync, on calls of its own), then sets
#    interval N.
# Both filter on [FI_START, FI_END) (the client's text) and reject
# kmemleak's own metadata allocations, which follow every allocation and
# would otherwise take half the faults (kmemleak falls back to its pool).
# Every allocation is eligible: sleeping ones (ignore-gfp-wait=N), order 0
# and highmem pages. fail_dump prints each fault with its stack (verbose=2);
# one with __GFP_NOWARN prints nothing, hence `times` tells whether it fired.

FI_DIR=/sys/kernel/debug
FI_ATTRS="failslab fail_page_alloc"
FAULT_PY="python3 $RTRS_REPO/tests/fault.py"
# The kernel's object tree (for mm/kmemleak.o): next to the cached modules.
FI_KOBJ=${RTRS_KMODS%/mods}/build
FI_REJ=

fi_available() { [ -d $FI_DIR/failslab ] && [ -d $FI_DIR/fail_page_alloc ] && [ -e /proc/self/fail-nth ]; }

# _fi_w <attr>/<file> <value>: one debugfs write (a builtin).
_fi_w() { echo "$2" > "$FI_DIR/$1"; }

# fi_setup <start> <end>: both attributes disarmed, every allocation
# eligible, the stack filter on [start, end) (hex), kmemleak rejected.
fi_setup() {
	local a
	# (kmemleak's range holds for the boot: kept in /run.)
	[ -z "$FI_REJ" ] && [ -s /run/rtrs-fault-kmemleak ] && read -r FI_REJ < /run/rtrs-fault-kmemleak
	if [ -z "$FI_REJ" ]; then
		FI_REJ=$($FAULT_PY range-kmemleak "$FI_KOBJ") || return 1
		echo "$FI_REJ" > /run/rtrs-fault-kmemleak
	fi
	for a in $FI_ATTRS; do
		_fi_w $a/times 0
		_fi_w $a/probability 100
		_fi_w $a/interval 1
		_fi_w $a/space 0
		# A stack with each fault that prints (FI_VERBOSE=1: a line).
		_fi_w $a/verbose "${FI_VERBOSE:-2}"
		_fi_w $a/verbose_ratelimit_burst 1000000
		_fi_w $a/task-filter N
		_fi_w $a/stacktrace-depth 32
		_fi_w $a/ignore-gfp-wait N
		_fi_w $a/reject-start "${FI_REJ% *}"
		_fi_w $a/reject-end "${FI_REJ#* }"
	done
	_fi_w fail_page_alloc/ignore-gfp-highmem N
	_fi_w fail_page_alloc/min-order 0
	fi_filter "$1" "$2"
}

# fi_filter <start> <end>: the stack filter of both attributes, kept in
# FI_START and FI_END.
fi_filter() {
	FI_START=$1 FI_END=$2
	_fi_filter_set "$1" "$2"
}
_fi_filter_set() {
	local a
	for a in $FI_ATTRS; do
		_fi_w $a/require-start "$1" && _fi_w $a/require-end "$2" || return 1
	done
}

# fi_filter_module <module>: the filter on a loaded module's text.
fi_filter_module() {
	local r
	r=$($FAULT_PY range-module "$1") || return 1
	fi_filter "${r% *}" "${r#* }"
}

# The module area (no KASLR in the test kernel): before a module is loaded,
# its init's allocations are the only ones with module code on the stack
# in the loading task.
FI_MODULES_START=0xffffffffa0000000
FI_MODULES_END=0xffffffffff000000

# fi_arm <attr> <N>: the N-th call from now that passes the filters fails.
# The counter is first made a multiple of N (the current filter is kept):
# the next multiple is then N counted calls away. (This costs N calls of
# fault.py's own: a few for a call path's first allocations, the census
# total for the last run of a sweep.)
fi_arm() {
	local a=$1
	FI_ARMED=$a
	$FAULT_PY resync "$FI_DIR/$a" "$2" > /dev/null || { echo "resync of $a failed" >&2; return 1; }
	_fi_w $a/interval "$2"
	_fi_w $a/times 1
}

# fi_settle: disarms the armed attribute; true if its fault fired.
fi_settle() {
	local a=$FI_ARMED
	_read_line "$FI_DIR/$a/times"
	_fi_w $a/times 0
	_fi_w $a/interval 1
	[ "$_LINE" = 0 ]
}

# fi_nth_write <N> <file> <value>: writes value to file from this shell with
# its fail-nth set to N. Sets FI_ERR (the write's error text, empty on
# success) and FI_LEFT (0: the fault was injected).
fi_nth_write() {
	local n=$1 f=$2 v=$3
	# In this shell, not a subshell: a fork starts with fail-nth 0.
	echo "$n" > /proc/self/fail-nth
	{ echo "$v" > "$f"; } 2> /tmp/fi-nth.err
	_read_line /proc/self/fail-nth; FI_LEFT=$_LINE
	echo 0 > /proc/self/fail-nth
	_read_line /tmp/fi-nth.err; FI_ERR=${_LINE##*write error: }
}

# --- census: which allocations an operation makes -----------------------------
# A run with no fault, traced: kmem events, each with a stacktrace trigger
# (kmemleak's metadata allocations filtered out of both). fault.py census
# then lists the allocations the filter passes, in order, each with its
# call path through the client (the return addresses inside the filter's
# range); the sweep fails the first allocation of each path.
FI_T=/sys/kernel/tracing
FI_EVS="kmalloc kmem_cache_alloc mm_page_alloc"

# fi_trace_start
fi_trace_start() {
	local e f
	[ -d $FI_T/events ] || mount -t tracefs nodev $FI_T
	echo 0 > $FI_T/tracing_on
	echo > $FI_T/trace
	echo 32768 > $FI_T/buffer_size_kb
	f="call_site < ${FI_REJ% *} || call_site >= ${FI_REJ#* }"
	for e in $FI_EVS; do
		if [ $e = mm_page_alloc ]; then
			echo stacktrace > $FI_T/events/kmem/$e/trigger
		else
			echo "$f" > $FI_T/events/kmem/$e/filter
			echo "stacktrace if $f" > $FI_T/events/kmem/$e/trigger
		fi
		echo 1 > $FI_T/events/kmem/$e/enable
	done
	echo 1 > $FI_T/tracing_on
}

# fi_trace_stop <file>: the ring buffer into file (fault.py save-raw);
# false if events were lost.
fi_trace_stop() {
	local e f lost=0 k v
	echo 0 > $FI_T/tracing_on
	for e in $FI_EVS; do
		echo 0 > $FI_T/events/kmem/$e/enable
	done
	for f in $FI_T/per_cpu/cpu*/stats; do
		while read -r k v; do
			case $k in overrun:|"dropped") [ "${v##* }" != 0 ] && lost=1 ;; esac
		done < "$f"
	done
	$FAULT_PY save-raw $FI_T "$1" > /dev/null || lost=1
	for e in $FI_EVS; do
		if [ $e = mm_page_alloc ]; then
			echo '!stacktrace' > $FI_T/events/kmem/$e/trigger
		else
			echo "!stacktrace" > $FI_T/events/kmem/$e/trigger
			echo 0 > $FI_T/events/kmem/$e/filter
		fi
	done
	echo > $FI_T/trace
	echo 1408 > $FI_T/buffer_size_kb
	[ $lost = 0 ]
}

# fi_census <file> <slab|page|all> [pid]: FI_TOTAL (allocations that pass
# the filter), and for the first allocation of each call path: FI_NS (its
# index), FI_SITE_NS and FI_SITES (its index among the allocations through
# its innermost call site, and that return address), FI_SIGS (the path).
fi_census() {
	local out n k a sig
	out=$($FAULT_PY census "$1" "$FI_START" "$FI_END" "${FI_REJ% *}" "${FI_REJ#* }" "$2" ${3:+"$3"}) || return 1
	FI_NS=() FI_SITE_NS=() FI_SITES=() FI_SIGS=()
	{
		read -r FI_TOTAL
		while read -r n k a sig; do
			FI_NS+=("$n"); FI_SITE_NS+=("$k"); FI_SITES+=("$a"); FI_SIGS+=("$sig")
		done
	} <<< "$out"
}

# fi_filter_site <return address>: the filter on exactly that call site,
# for a while (fi_filter "$FI_START" "$FI_END" restores it).
fi_filter_site() {
	local end
	end=$(printf '0x%x' $(( $1 + 1 )))
	_fi_filter_set "$1" "$end"
}

# fi_hits <mark> <tag>: the call path (frames tagged [tag], or any module's
# for "*") of each fault printed after the mark, one per line.
fi_hits() {
	dmesg > /tmp/fi-dmesg
	$FAULT_PY hits /tmp/fi-dmesg "$1" "$2"
}

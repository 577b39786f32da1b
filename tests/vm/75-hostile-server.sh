#!/bin/bash
# A server that lies: tests/hostile/rtrs-hostile-srv (user space, on the
# VM's rxe device, rtrs-server not loaded) answers the client through each
# step of protocol 2.0 and then misbehaves in one way per case: rejects
# with odd private data, a conn_rsp with bad fields, a bad or missing
# INFO_RSP, IO responses that are unknown, out of range, unasked for or
# repeated, heartbeats flooding or missing, disconnects at each step, no
# answer at all. The client is driven by tests/consumer (rtrs_test_clt, the
# seven exports from a debugfs file).
#
# Each case runs twice. Alone: a session over the hostile path; it opens or
# is refused, and if it opens, 8 writes and 8 reads of 4 KiB are issued;
# every request must be confirmed (requests the server leaves hanging are
# failed by a sysfs disconnect of the path), then the session closes.
# Beside a good path: the server's --good-addr listener serves a session
# well, the hostile path is added to it (add_path), and 16 writes and 16
# reads must all be confirmed while the good path stays connected.
# For this module each case must also log a line naming what was wrong
# (EXPECT below). The harness's dmesg check and kmemleak scan cover
# crashes, KASAN reports and leaks. C's outcome and log lines, the oracle,
# are recorded beside this module's on demand (both tiers run this module
# only): HS_CLIENTS="rs c", e.g.
#   make vm CMD='HS_CLIENTS="rs c" bash tests/vm/75-hostile-server.sh'
# docs/hostile-server.md has the table of such a run (tests/hostile/table.py
# makes it from the TAP output).
#
# Environment: HS_CASES (names), HS_CLIENTS ("rs"; "rs c" adds the C client).
. "$(dirname "$0")/../lib.sh"
HS=$RTRS_REPO/tests/hostile/rtrs-hostile-srv
TC_KO=$RTRS_REPO/tests/consumer/rtrs_test_clt.ko
CTL=/sys/kernel/debug/rtrs_test_clt/ctl
CLS=/sys/class/rtrs-client
H=10.0.2.15 G=10.0.2.16

# For this module: a regular expression its log must match after each case
# (what was wrong, named), or "ok" where the case is a control or a
# harmless oddity (the session opens and every request succeeds). A case
# without one (io-no-answer) has nothing the client can see: RTRS has no
# request timeout, here as in C; its requests complete when the path goes.
declare -A EXPECT=(
	[good]=ok
	[reject-noprivdata]="Connect rejected but with malformed message"
	[reject-short]="Connect rejected: .*rtrs errno -22"
	[reject-enomem]="Connect rejected: .*rtrs errno -12"
	[reject-ebusy]="Previous session is still exists"
	[reject-errno0]="Connect rejected but with malformed message"
	[reject-positive]="Connect rejected: .*rtrs errno 5"
	[reject-cid1]="Connect rejected: .*rtrs errno -104"
	[rsp-bad-magic]="invalid RTRS magic"
	[rsp-bad-version]="unsupported major RTRS version 3"
	[rsp-minor-version]=ok
	[rsp-errno]="conn rsp carries errno -5"
	[rsp-short]=ok
	[rsp-qd0]="invalid queue depth 0"
	[rsp-qd-max]="IMM payload too small for 65535"
	[rsp-maxio0]="invalid max_io_size 0"
	[rsp-maxio-misaligned]=ok
	[rsp-maxio-huge]="invalid chunk size"
	[rsp-hdr0]="invalid max_hdr_size 0"
	[rsp-chunk-overflow]="invalid chunk size"
	[rsp-qd-changes]="queue depth changed"
	[rsp-flags-junk]=ok
	[no-accept]="init_conns\(\) failed: err=-110"
	[disconnect-after-accept-cid0]="disconnected by the server"
	[disconnect-at-cid1]="disconnected by the server"
	[info-none]="no path info response"
	[info-wrong-type]="unexpected message type 0"
	[info-short]="truncated message"
	[info-sg0]="sg_cnt 0 does not divide"
	[info-sg-above-qd]="Path info response: truncated message"
	[info-sg-indivisible]="sg_cnt 3 does not divide"
	[info-desc-len0]="invalid desc\[0\]\.len 0"
	[info-desc-misaligned]="invalid desc\[0\]\.len"
	[info-desc-short]="not fully mapped"
	[info-desc-overflow]="address overflow"
	[info-too-big]="Path info response recv failed"
	[info-twice]="RDMA failed"
	[info-disconnect]="disconnected by the server"
	[info-sessname]="disconnected by the server"
	[info-late]="no path info response"
	[io-imm-unknown]="Unknown IMM type 5"
	[io-msgid-beyond]="IO response for bad msg_id"
	[io-rsp-not-inflight]="not in flight"
	[io-rsp-twice]="not in flight"
	[io-errno-range]="request failed: error=-511"
	[io-errno-eio]="request failed: error=-5"
	[io-disconnect]="disconnected by the server"
	[io-rsp-on-cid0]=ok
	[io-send-unexpected]="RDMA failed"
	[io-send-empty]=ok
	[io-big-send]="RDMA failed"
	[io-no-remote-inv]=ok
	[io-winv-no-send]=ok
	[rkey-bad-bufid]="buf_id [0-9]+ != msg_id"
	[rkey-short]="rkey response is malformed: size 4"
	[rkey-wrong-type]="rkey response is malformed"
	[hb-flood]="heartbeat flood"
	[hb-ack-unsolicited]="HB_ACK without a heartbeat outstanding"
	[hb-silent]="HB missed max reached"
	[hb-on-io-con]=ok
)
# Cases not run over the C client: what it does is recorded instead.
# (Where C WARNs the harness would fail the run: what it did is recorded.)
declare -A C_SKIP=(
	[rsp-qd0]="not run: C takes queue_depth 0 from cid 0 and WARNs creating cid 1 (rtrs-clt.c:1692, WARN_ON(!queue_depth)), then fails the open with EINVAL; after the failed add_path its session has no permits left (16 of 16 requests got none), seen at 96f63b0"
	[io-msgid-beyond]="not run: C WARNs for each response (rtrs-clt.c:497, WARN_ON(msg_id >= queue_depth)); its requests stay in flight until the path goes, seen at 96f63b0"
	[io-send-empty]="not run: C WARNs for a receive without an immediate (rtrs-clt.c:673), then serves the IO, seen at 96f63b0"
	[rkey-bad-bufid]="not run: C WARNs for each rkey response (rtrs-clt.c:562, WARN_ON(buf_id != msg_id)) and fails the requests with ECONNABORTED, seen at 96f63b0"
	[rsp-qd-max]="not run: the C client takes queue_depth 65535 with 8 KiB chunks (its IMM cannot address them), sizes its queues for it and runs the VM out of memory (kernel panic, seen at 3009a5c)"
)
# For this module: a line its log must have once per write of a round
# (alone: 8, within one burst of the rate limit), before its reads run. A
# write's response sent twice comes while the write's MR is being
# invalidated, or after: either way the second one is not taken for the
# request's completion (only the invalidation's completion is), so it is
# logged as not in flight, as a read's is.
declare -A EXPECT_WRITES=([io-rsp-twice]="that is not in flight")
# Cases whose fault shows only when the path reconnects: the session over
# the hostile path alone is reconnected through sysfs once it is open.
declare -A RECONNECT=([rsp-qd-changes]=1)
# Cases whose fault shows only on a heartbeat tick (hb_interval_ms): each
# session is held open until this module has logged the expected line, or
# for C until the server has posted its whole flood (CI once closed both
# sessions before the first tick saw the flood).
declare -A HOLD=([hb-flood]="hb-flood: all [0-9]+ HB_MSG posted")
QUICK_CASES="good rsp-bad-magic info-desc-overflow io-rsp-twice hb-flood"
if [ -x "$HS" ]; then ALL_CASES=$("$HS" --list | tr '\n' ' '); else ALL_CASES=$QUICK_CASES; fi
HS_CASES=${HS_CASES:-$(by_tier "$QUICK_CASES" "$ALL_CASES")}
HS_CLIENTS=${HS_CLIENTS:-rs}
read -r -a _cases <<< "$HS_CASES"; read -r -a _cls <<< "$HS_CLIENTS"
PLAN=$(( 2 + ${#_cls[@]} * (${#_cases[@]} + 2) ))
skip_all_unless_api $PLAN
tap_plan $PLAN
SECONDS=0
ts() { echo "# [+${SECONDS}s] $*"; }

tap_check "the hostile server and the consumer are built" test -x "$HS" -a -f "$TC_KO"
ip addr add $G/24 dev eth0
modprobe -a ib_uverbs rdma_ucm
tap_check "user verbs on rxe_eth0, $G on eth0" wait_gid $G

# tc <command>: one ctl write; TC_ERR is its error text ("" when it worked).
tc() {
	TC_ERR=$( { echo "$*" > $CTL; } 2>&1 )
	TC_ERR=${TC_ERR##*write error: }
	[ -z "$TC_ERR" ]
}
# tc_state: TC_PENDING, TC_LAST and TC_CONF from the ctl read-out.
tc_state() {
	local l
	TC_PENDING=0 TC_LAST=""
	while IFS= read -r l; do
		case $l in
		pending=*) TC_PENDING=${l#pending=} ;;
		last:*) TC_LAST=${l#last: } ;;
		esac
	done < $CTL
}
# settle <sess>: every request confirmed; the ones the server leaves
# hanging are failed by disconnecting the session's hostile path. Sets
# NOTES.
settle() {
	local p
	tc "wait timeout_ms=8000"; tc_state
	[ "$TC_PENDING" = 0 ] && return 0
	NOTES+="$TC_PENDING pending, disconnected; "
	for p in "$CLS/$1"/paths/*@ip:$H; do echo 1 > "$p/disconnect" 2>/dev/null; done
	tc "wait timeout_ms=60000"; tc_state
	[ "$TC_PENDING" = 0 ] || { BAD+="$TC_PENDING requests never confirmed; "; return 1; }
}
# _rl_fresh <text>: the last log line with <text> is over 5 s old (the rate
# limit's window of its call site, RATELIMIT_INTERVAL_MS, is over), by the
# log's clock: the time of a line written now, whole seconds, a second's
# margin.
_rl_fresh() {
	local last now
	last=$(dmesg | grep -F -- "$1" | tail -n 1 | sed -E 's/^\[ *([0-9]+)\..*/\1/')
	[ -z "$last" ] && return 0
	now=$(kmsg_mark)
	now=$(dmesg | grep -F -- "$now" | tail -n 1 | sed -E 's/^\[ *([0-9]+)\..*/\1/')
	[ $(( now - last )) -ge 7 ]
}
# _count_since <mark> <text> <n>: at least n log lines with <text> since the mark.
_count_since() {
	[ "$(dmesg | awk -v m="$1" 'index($0, m) { f = 1; next } f' | grep -cF -- "$2")" -ge "$3" ]
}
# io_round <case> <n>: n writes and n reads of 4 KiB; IO_RES is what they
# gave. For this module, with n within one burst of the rate limit, the
# writes' EXPECT_WRITES lines (one per write) are waited for before the
# reads; BAD says if some are missing.
io_round() {
	local wm="" exp=${EXPECT_WRITES[$1]:-}
	if [ "$CL" = rs ] && [ -n "$exp" ] && [ "$2" -le 10 ]; then
		wait_for 15 _rl_fresh "$exp" || NOTES+="log window not fresh; "
		wm=$(kmsg_mark)
	fi
	tc "io dir=write count=$2 len=4096 timeout_ms=8000"; tc_state; IO_RES="W ${TC_LAST#io write: }"
	if [ -n "$wm" ] && ! wait_for 10 _count_since "$wm" "$exp" "$2"; then
		BAD+="$2 writes: $(dmesg | awk -v m="$wm" 'index($0, m) { f = 1; next } f' | grep -cF -- "$exp") log lines with '$exp'; "
	fi
	tc "io dir=read count=$2 len=4096 timeout_ms=8000"; tc_state; IO_RES+="; R ${TC_LAST#io read: }"
}
# hold <case> <mark> <n>: for a HOLD case, waits (bounded) until this
# module has logged the expected line since the mark, or for C until the
# server has logged its n-th HOLD line.
_srv_said() { [ "$(grep -cE -- "$2" "/tmp/hs-$1.log")" -ge "$3" ]; }
hold() {
	[ -n "${HOLD[$1]:-}" ] || return 0
	if [ "$CL" = rs ]; then
		wait_for 30 dmesg_since "$2" "${EXPECT[$1]}" || NOTES+="not logged while held ($3); "
	else
		wait_for 60 _srv_said "$1" "${HOLD[$1]}" "$3" || NOTES+="the server did not finish ($3); "
	fi
}
# all_ok <n>: the last io_round's 2n requests all succeeded.
all_ok() { [[ $IO_RES == *"ok=$1 err=[] pending=0"*"ok=$1 err=[] pending=0"* ]]; }

declare -A RES=()
# run_case <case>
run_case() {
	local c=$1 m pm spid a_open b_add good all lines exp p r
	BAD="" NOTES=""
	m=$(kmsg_mark)
	"$HS" --addr $H --good-addr $G --case "$c" --qd 16 --max-io 4096 --timeout 900 --expect-sess hb \
		> "/tmp/hs-$c.log" 2>&1 &
	spid=$!
	if ! wait_for 20 grep -q "^listening" "/tmp/hs-$c.log"; then
		kill $spid 2>/dev/null; wait $spid
		BAD="the server did not start: $(tail -n 3 "/tmp/hs-$c.log")"
		RES[$CL $c]="-"; return
	fi

	# Alone.
	pm=$m
	if tc "open sess=ha path=ip:$H delay=1 attempts=2"; then
		a_open=ok
		io_round "$c" 8
		settle ha
		hold "$c" "$pm" 1
		a_open+=" ($IO_RES)"
		[ "${EXPECT[$c]:-}" = ok ] && ! all_ok 8 && BAD+="alone: IO failed on a control case; "
		if [ -n "${RECONNECT[$c]:-}" ]; then
			for p in "$CLS"/ha/paths/*; do
				r=$( { echo 1 > "$p/reconnect"; } 2>&1 ); r=${r##*write error: }
				a_open+=" reconnect: ${r:-ok}"
			done
		fi
		tc "close timeout_ms=60000" || BAD+="alone: close: $TC_ERR; "
	else
		a_open=$TC_ERR
		[ "${EXPECT[$c]:-}" = ok ] && BAD+="alone: a control case does not open ($TC_ERR); "
	fi
	wait_for 60 _absent "$CLS/ha" || BAD+="alone: session ha left behind; "

	# Beside a good path.
	pm=$(kmsg_mark)
	if tc "open sess=hb path=ip:$G delay=1 attempts=2"; then
		b_add=$( { echo "ip:$H" > "$CLS/hb/add_path"; } 2>&1 ); b_add=${b_add##*write error: }
		b_add=${b_add:-ok}
		io_round "$c" 16
		settle hb
		hold "$c" "$pm" 2
		all_ok 16 || { [ -z "$NOTES" ] && [ "${EXPECT[$c]:-}" = ok ] && BAD+="beside: IO failed; "; }
		good=gone
		for p in "$CLS"/hb/paths/*@ip:$G; do _read_line "$p/state" && good=$_LINE; done
		[ "$good" = connected ] || BAD+="beside: the good path is $good; "
		b_add+=" ($IO_RES; good path $good)"
		tc "close timeout_ms=60000" || BAD+="beside: close: $TC_ERR; "
	else
		BAD+="beside: the good path does not open ($TC_ERR); "
		b_add="-"
	fi
	wait_for 60 _absent "$CLS/hb" || BAD+="beside: session hb left behind; "

	kill $spid 2>/dev/null; wait $spid
	# What the client logged about it: its lines after the mark, without the
	# ones every close prints.
	# (C's lines start "rtrs_client L<line>: ", this module's "rtrs_client_rs: ".)
	all=$(dmesg | awk -v m="$m" -v mod="$CL_MOD" 'index($0, m) { f = 1; next }
		f && (index($0, mod ":") || index($0, mod " L") || index($0, "WARNING:"))' |
		sed -E -e 's/^\[[ 0-9.]*\] //' -e "s/^$CL_MOD( L[0-9]+)?: //" -e 's/^WARNING: CPU: [0-9]+ PID: [0-9]+ at /WARN at /' |
		grep -vE 'CM error \(CM event: timewait exit|session (opened|closed)|Unhandled QP event|QP event COMM_EST|^$')
	lines=$( [ -n "$all" ] && sort <<<"$all" | uniq -c | sort -rn | head -n 4 | sed 's/^ *//' | tr '\n' '|')
	exp=${EXPECT[$c]:-}
	if [ "$CL" = rs ] && [ -n "$exp" ] && [ "$exp" != ok ] && ! grep -qE -- "$exp" <<<"$all"; then
		BAD+="no log line matching /$exp/; "
	fi
	RES[$CL $c]="alone: $a_open | beside: add_path $b_add | log: ${lines:-none}${NOTES:+ | notes: $NOTES}"
}

for CL in "${_cls[@]}"; do
	case $CL in
	rs) CL_MOD=rtrs_client_rs; load_rs hb_interval_ms=1000 hb_missed_max=3 ;;
	c) CL_MOD=rtrs_client; modprobe rtrs_client ;;
	esac
	tap_check "$CL: client and consumer load" insmod "$TC_KO"
	for c in "${_cases[@]}"; do
		t0=$SECONDS
		if [ "$CL" = c ] && [ -n "${C_SKIP[$c]:-}" ]; then
			RES[$CL $c]=${C_SKIP[$c]}
			tap_skip "$CL $c" "${C_SKIP[$c]}"
			continue
		fi
		run_case "$c"
		if [ -z "$BAD" ]; then
			tap_ok "$CL $c ($(( SECONDS - t0 )) s)"
		else
			tap_not_ok "$CL $c ($(( SECONDS - t0 )) s)"; diag "$BAD" "server: $(grep -m3 'hostile:' "/tmp/hs-$c.log")"
		fi
		diag "  ${RES[$CL $c]}"
	done
	tap_check "$CL: consumer and client unload" unload_modules rtrs_test_clt "$CL_MOD"
done

diag "case | client | outcome"
for c in "${_cases[@]}"; do
	for CL in "${_cls[@]}"; do diag "$c | $CL | ${RES[$CL $c]:-}"; done
done
tap_done

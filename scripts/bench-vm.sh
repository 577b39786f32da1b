#!/bin/bash
# In the VM: see bench.sh. Two rounds, C then this module each time, so that
# drift over the boot shows; the ratio uses the sums.
set -uo pipefail
. "$(dirname "$0")/../tests/lib.sh"
RUNTIME=${RUNTIME:-20}
ROUNDS=${ROUNDS:-2}

# run_fio <dev>: prints the read IOPS.
run_fio() {
	fio --name=bench --filename="$1" --direct=1 --ioengine=libaio --rw=randread \
		--bs=4k --iodepth=32 --numjobs=1 --time_based --runtime="$RUNTIME" --ramp_time=2 \
		--size=64M --output-format=terse --terse-version=3 | tail -n1 | cut -d';' -f8
}

start_server 131072
dd if=/dev/zero of=/dev/ram0 bs=1M count=64 oflag=direct status=none
if ! rs_api_exported; then
	echo "rtrs-client-rs: the rtrs_clt_* API is not exported yet; no comparison"
	exit 0
fi
c_sum=0; rs_sum=0
for r in $(seq 1 "$ROUNDS"); do
	modprobe rnbd_client
	dev=$(map_rnbd benchc /dev/ram0)
	c_iops=$(run_fio "$dev")
	unmap_rnbd benchc
	unload_modules rnbd_client rtrs_client
	echo "round $r C client:       4k randread QD32 IOPS $c_iops"

	load_rnbd_rs
	dev=$(map_rnbd benchrs /dev/ram0)
	rs_iops=$(run_fio "$dev")
	unmap_rnbd benchrs
	unload_modules rnbd_client rtrs_client_rs
	echo "round $r rtrs-client-rs: 4k randread QD32 IOPS $rs_iops"
	c_sum=$((c_sum + ${c_iops:-0})); rs_sum=$((rs_sum + ${rs_iops:-0}))
done
awk -v r="$rs_sum" -v c="$c_sum" 'BEGIN { if (c > 0) printf "ratio rtrs-client-rs / C: %.2f\n", r / c }'
stop_server

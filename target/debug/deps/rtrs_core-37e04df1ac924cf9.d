/work/main/target/debug/deps/rtrs_core-37e04df1ac924cf9.d: rtrs_core/src/lib.rs rtrs_core/src/imm.rs rtrs_core/src/names.rs rtrs_core/src/proto.rs rtrs_core/src/sysfs_fmt.rs

/work/main/target/debug/deps/librtrs_core-37e04df1ac924cf9.rlib: rtrs_core/src/lib.rs rtrs_core/src/imm.rs rtrs_core/src/names.rs rtrs_core/src/proto.rs rtrs_core/src/sysfs_fmt.rs

/work/main/target/debug/deps/librtrs_core-37e04df1ac924cf9.rmeta: rtrs_core/src/lib.rs rtrs_core/src/imm.rs rtrs_core/src/names.rs rtrs_core/src/proto.rs rtrs_core/src/sysfs_fmt.rs

rtrs_core/src/lib.rs:
rtrs_core/src/imm.rs:
rtrs_core/src/names.rs:
rtrs_core/src/proto.rs:
rtrs_core/src/sysfs_fmt.rs:

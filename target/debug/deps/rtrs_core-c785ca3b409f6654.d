/work/main/target/debug/deps/rtrs_core-c785ca3b409f6654.d: rtrs_core/src/lib.rs rtrs_core/src/imm.rs rtrs_core/src/names.rs rtrs_core/src/proto.rs rtrs_core/src/sysfs_fmt.rs

/work/main/target/debug/deps/rtrs_core-c785ca3b409f6654: rtrs_core/src/lib.rs rtrs_core/src/imm.rs rtrs_core/src/names.rs rtrs_core/src/proto.rs rtrs_core/src/sysfs_fmt.rs

rtrs_core/src/lib.rs:
rtrs_core/src/imm.rs:
rtrs_core/src/names.rs:
rtrs_core/src/proto.rs:
rtrs_core/src/sysfs_fmt.rs:

/*
 * The guest's side of scripts/qemu-insn-count.c: runs the plugin's magic
 * no-op, nopw 0x4b4d5200+cmd(%rax,%rax,1), which is a plain no-op without
 * the plugin.
 *   insn-mark reset [dev]   cmd 1: all the plugin's counters to zero
 *   insn-mark dump [dev]    cmd 2: the plugin appends its counters to its out= file
 * With a block device name (rnbd0), it prints the device's completed IOs
 * (reads + writes of /proc/diskstats) read just before and just after the
 * magic no-op: "<before> <after>", so that the window's IOs can be counted
 * without a process start between the two.
 * Built static on the host (scripts/bench.sh), run in the guest:
 *   gcc -static -O2 -o insn-mark insn-mark.c
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[1 << 16];

/* Reads + writes completed of dev, or -1. */
static long long ios_of(const char *dev)
{
	int fd = open("/proc/diskstats", O_RDONLY);
	ssize_t n, len = 0;

	if (fd < 0)
		return -1;
	while (len < (ssize_t)sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = 0;
	for (char *line = buf; line && *line;) {
		char *next = strchr(line, '\n');
		unsigned int maj, min;
		char name[64];
		unsigned long long rd, rdm, rds, rdt, wr;

		if (next)
			*next++ = 0;
		if (sscanf(line, "%u %u %63s %llu %llu %llu %llu %llu", &maj, &min, name, &rd, &rdm,
			   &rds, &rdt, &wr) == 8 &&
		    strcmp(name, dev) == 0)
			return (long long)(rd + wr);
		line = next;
	}
	return -1;
}

int main(int argc, char **argv)
{
	long long a = 0, b = 0;
	int cmd;

	if ((argc == 2 || argc == 3) && strcmp(argv[1], "reset") == 0)
		cmd = 1;
	else if ((argc == 2 || argc == 3) && strcmp(argv[1], "dump") == 0)
		cmd = 2;
	else {
		fprintf(stderr, "usage: %s reset|dump [blockdev]\n", argv[0]);
		return 2;
	}
	if (argc == 3 && (a = ios_of(argv[2])) < 0) {
		fprintf(stderr, "%s: no %s in /proc/diskstats\n", argv[0], argv[2]);
		return 1;
	}
	if (cmd == 1)
		__asm__ volatile(".byte 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x01, 0x52, 0x4d, 0x4b" ::: "memory");
	else
		__asm__ volatile(".byte 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x02, 0x52, 0x4d, 0x4b" ::: "memory");
	if (argc == 3) {
		b = ios_of(argv[2]);
		printf("%lld %lld\n", a, b);
	}
	return 0;
}

/*
 * prog_fds.c — a program that closes its standard streams and reopens them while recording
 * (fds.sh checks the result).
 *
 *   prog_fds DIR    closes fds 0, 1 and 2, starts a session into DIR, then opens DIR/out.txt
 *                   (which becomes fd 0, the lowest free) and DIR/out2.txt (fd 1) and prints
 *                   to stdout; checks that the trace file's descriptor is >= 3 and
 *                   close-on-exec; records ranges; stops.
 *
 * Exit status: 0 when every check held (reported in DIR/out2.txt), 1 otherwise.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tally.h>

/* The descriptor of the open .tally file, or -1. */
static int trace_fd(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int found = -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        char link[300], target[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%s", de->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 6)
            continue;
        target[n] = 0;
        if (!strcmp(target + n - 6, ".tally"))
            found = atoi(de->d_name);
    }
    closedir(d);
    return found;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    char path[PATH_MAX];
    close(0);
    close(1);
    close(2);
    tally_config c;
    memset(&c, 0, sizeof c);
    c.output_dir = argv[1];
    c.name = "fds";
    c.write = TALLY_WRITE_TALLY;
    if (tally_start(&c) != 0)
        return 1;
    TALLY_SCOPE("before", TALLY_USER) {}
    snprintf(path, sizeof path, "%s/out.txt", argv[1]);
    int in = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644); /* fd 0 */
    snprintf(path, sizeof path, "%s/out2.txt", argv[1]);
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644); /* fd 1: stdout */
    int ok = in == 0 && out == 1;
    int fd = trace_fd();
    int flags = fd >= 0 ? fcntl(fd, F_GETFD) : -1;
    ok &= fd >= 3 && flags >= 0 && (flags & FD_CLOEXEC);
    for (int i = 0; i < 2000; i++) { /* a lot of output on fd 1 */
        TALLY_SCOPE("print", TALLY_USER)
        printf("line %d of the program's own output, which must not land in the trace\n", i);
    }
    fflush(stdout);
    tally_stop();
    printf("fds: stdin=%d stdout=%d trace_fd=%d cloexec=%d %s\n", in, out, fd,
           flags >= 0 && (flags & FD_CLOEXEC), ok ? "ok" : "FAILED");
    fflush(stdout);
    return ok ? 0 : 1;
}

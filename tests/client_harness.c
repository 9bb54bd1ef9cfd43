/* client_harness.c - running the client programs for tests (see client_harness.h). */
#include "client_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void tool_path(const char *tool, char *out, size_t cap)
{
    if (strchr(tool, '/')) {
        snprintf(out, cap, "%s", tool);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, cap, "%s/%s", n > 0 ? self : "build", tool);
}

/* The whole of an unlinked temporary file, NUL-terminated. */
static char *slurp(FILE *f)
{
    long n = ftell(f);
    char *s = malloc(n > 0 ? (size_t)n + 1 : 1);
    if (!s)
        return NULL;
    rewind(f);
    size_t got = n > 0 ? fread(s, 1, (size_t)n, f) : 0;
    s[got] = '\0';
    return s;
}

bool client_run_tool(const char *tool, const char *const *args, struct client_run *r)
{
    memset(r, 0, sizeof(*r));
    r->status = -1;
    char bin[PATH_MAX];
    tool_path(tool, bin, sizeof(bin));
    const char *argv[64] = {bin};
    int argc = 1;
    for (int i = 0; args && args[i] && argc < 63; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    /* files, not pipes: a chatty child can never block on a full pipe */
    FILE *out = tmpfile(), *err = tmpfile();
    if (!out || !err) {
        if (out)
            fclose(out);
        if (err)
            fclose(err);
        return false;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(fileno(out), STDOUT_FILENO);
        dup2(fileno(err), STDERR_FILENO);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, STDIN_FILENO);
        execv(bin, (char *const *)argv);
        fprintf(stderr, "cannot run %s\n", bin);
        _exit(127);
    }
    int status = 0;
    bool ok = pid > 0 && waitpid(pid, &status, 0) == pid;
    if (ok && WIFEXITED(status))
        r->status = WEXITSTATUS(status);
    fseek(out, 0, SEEK_END);
    fseek(err, 0, SEEK_END);
    r->out = slurp(out);
    r->err = slurp(err);
    fclose(out);
    fclose(err);
    return ok && r->out && r->err;
}

void client_run_free(struct client_run *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof(*r));
}

const char *client_url(int port, char *buf, int cap)
{
    snprintf(buf, (size_t)cap, "http://127.0.0.1:%d", port);
    return buf;
}

int client_closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int port = 1; /* privileged: nothing of ours listens there */
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

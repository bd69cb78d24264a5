/*
 * The Android-shaped rig's native parts, one multi-call binary built by
 * rig.sh with the host's gcc (the rig's /lib64 stands for bionic):
 *
 *   rig enter --root DIR --sock S [--uid U --gid G] -- CMD...
 *        (host side) chroot into the rig, install the seccomp filter whose
 *        listener goes to the supervisor on S, drop to U/G, exec CMD: every
 *        process of the rig runs under it, as every process of a phone runs
 *        under its SELinux policy.
 *   rig seccomp-supervisor S LOG
 *        (host side) answers the filter: mount(2) or fsopen(2) of debugfs
 *        is refused with EPERM (a user build has no debugfs and SELinux
 *        refuses mounting it: source.android.com "Use DebugFS in Android
 *        12"); every other mount goes on. Each refusal is logged to LOG.
 *   rig zygote
 *        zygote64: forks an app for each launch written to
 *        /data/system/zygote.fifo ("PKG T0"), or, with
 *        persist.device_config.runtime_native.usap_pool_enabled=true, hands
 *        it to a process of its USAP pool, forked before the launch. The
 *        child specialises as Android's does: SetThreadName (zygote's JNI,
 *        core/jni/com_android_internal_os_Zygote.cpp: 14 characters of the
 *        name's last 15), ActivityThread.main's setArgV0("<pre-initialized>"),
 *        bindApplication's setArgV0(name) (AndroidRuntime::setArgv0: the
 *        comm is the last 15 characters, argv[0] the name), never an exec.
 *        What Android does to the app after that, which iolab must see
 *        (each cited where it is done below): the uid is the package's
 *        (setresuid before SetThreadName); the nice is reset three times
 *        (SpecializeCommon's setpriority, Zygote.java's
 *        Thread.setPriority(NORM_PRIORITY), each new Java thread's own
 *        SetNativePriority); HWUI's RenderThread sets PRIORITY_DISPLAY;
 *        system_server boosts the top app's main and render threads to
 *        THREAD_PRIORITY_TOP_APP_BOOST and resets them when it leaves the
 *        top. An app with debug.rig.webview=1 has a renderer forked by
 *        webview_zygote (an isolated uid), and one with
 *        debug.rig.service=1 a `PKG:service` process; debug.rig.decoy=PKG2
 *        has zygote fork PKG2 (another uid, whose names share the app's
 *        last 15 characters) just before each launch of the app.
 *   rig webview_zygote
 *        the WebView zygote (a child zygote of zygote64 on a phone): forks
 *        a renderer per request on /data/system/webview_zygote.fifo
 *        ("PKG T0"), as an isolated uid (99000 + n).
 *   rig system_server
 *        the parts of system_server that act on the app from outside:
 *        OomAdjuster's top-app boost (requests on /data/system/ams.fifo:
 *        "top PID", "bg PID", "render PID TID"), PowerManager's screen
 *        timeout (settings system screen_off_timeout, kept on while
 *        plugged in by settings global stay_on_while_plugged_in) and the
 *        keyguard it brings. (The background dexopt job is `cmd package
 *        bg-dexopt-job`, in the rig's cmd.)
 *   su [-c CMD] [UID]   (argv[0] su)
 *        Magisk's su client (native/src/core/su/su.cpp): the request and
 *        its stdin, stdout and stderr file descriptors go to magiskd, which
 *        runs the command as root in a session of its own; the client only
 *        waits for the exit code. A dropped adb link hangs up the shell, not
 *        the root command, which sees end-of-file on stdin.
 *   rig magiskd         the daemon side.
 *
 * The app (what zygote's child runs) reads what a cold start of the rig's
 * system app reads, draws (appends to /data/system/PKG.drawn, which `am
 * start -W` waits for), and logs "Displayed" and "Fully drawn" to the
 * rig's logcat only for cold and warm launches, as ActivityMetricsLogger
 * does (isInterestedToEventLog: TYPE_TRANSITION_COLD/WARM_LAUNCH). It then
 * takes commands on /data/system/PKG.ctl: "home" (paused, stopped 300 ms
 * later), "front T0" (a hot launch: drawn from memory, nothing logged),
 * "recreate T0" (a warm launch: the activity made again in the live
 * process). Its activity state is /data/system/PKG.state.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SYS "/data/system"
#define USAP_PROP "persist.device_config.runtime_native.usap_pool_enabled"
#define USAP_POOL 2

static void die(const char *what) {
    fprintf(stderr, "rig: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) && errno == EINTR) {
    }
}

/* ---- seccomp: the rig's "SELinux policy" on mounts ------------------- */

static int send_fd(int sock, int fd, const void *data, size_t len) {
    char buf[CMSG_SPACE(sizeof(int))];
    memset(buf, 0, sizeof buf);
    struct iovec iov = {(void *)data, len};
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = buf;
    m.msg_controllen = sizeof buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(sock, &m, 0) < 0 ? -1 : 0;
}

/* Receives up to `max` fds and `len` bytes; returns the fds received. */
static int recv_fds(int sock, int *fds, int max, void *data, size_t len) {
    char buf[CMSG_SPACE(sizeof(int) * 8)];
    struct iovec iov = {data, len};
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = buf;
    m.msg_controllen = sizeof buf;
    if (recvmsg(sock, &m, MSG_WAITALL) <= 0)
        return -1;
    int n = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (int i = 0; i < k && n < max; i++)
                memcpy(&fds[n++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        }
    }
    return n;
}

/* read(2) until `len` bytes or end of file. */
static int read_full(int fd, void *buf, size_t len) {
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        got += n;
    }
    return 0;
}

static int connect_unix(const char *path) {
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0)
        return -1;
    return s;
}

static int listen_unix(const char *path, int mode) {
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    unlink(path);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 64) < 0)
        die(path);
    chmod(path, mode);
    return s;
}

static int enter(int argc, char **argv) {
    const char *root = NULL, *sock = NULL;
    int uid = -1, gid = -1, i = 2;
    for (; i < argc && strcmp(argv[i], "--"); i += 2) {
        if (i + 1 >= argc)
            break;
        if (!strcmp(argv[i], "--root"))
            root = argv[i + 1];
        else if (!strcmp(argv[i], "--sock"))
            sock = argv[i + 1];
        else if (!strcmp(argv[i], "--uid"))
            uid = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--gid"))
            gid = atoi(argv[i + 1]);
    }
    if (!root || !sock || i + 1 >= argc) {
        fprintf(stderr, "usage: rig enter --root DIR --sock S [--uid U --gid G] -- CMD...\n");
        return 2;
    }
    int sup = connect_unix(sock);
    if (sup < 0)
        die("the seccomp supervisor");
    if (chroot(root) || chdir("/"))
        die("chroot");
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 4),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mount, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_fsopen, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    int listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (listener < 0)
        die("seccomp");
    if (send_fd(sup, listener, "L", 1))
        die("handing the listener over");
    close(listener);
    close(sup);
    if (gid >= 0 && (setgroups(0, NULL) || setgid(gid)))
        die("setgid");
    if (uid >= 0 && setuid(uid))
        die("setuid");
    execv(argv[i + 1], argv + i + 1);
    die(argv[i + 1]);
    return 1;
}

/* The string at `addr` in `pid`'s memory (up to len-1 bytes). */
static int read_str(pid_t pid, uint64_t addr, char *out, size_t len) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = addr ? pread(fd, out, len - 1, (off_t)addr) : -1;
    close(fd);
    if (n < 0)
        return -1;
    out[n] = 0;
    return 0;
}

static int supervisor(const char *sock, const char *log) {
    int srv = listen_unix(sock, 0600);
    struct pollfd p[256];
    int n = 1;
    p[0].fd = srv;
    p[0].events = POLLIN;
    signal(SIGPIPE, SIG_IGN);
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        if (poll(p, n, -1) < 0 && errno != EINTR)
            die("poll");
        if (p[0].revents & POLLIN) {
            int c = accept4(srv, NULL, NULL, SOCK_CLOEXEC), fd;
            char tag;
            if (c >= 0 && recv_fds(c, &fd, 1, &tag, 1) == 1 && n < 256) {
                p[n].fd = fd;
                p[n].events = POLLIN;
                p[n].revents = 0;
                n++;
            }
            if (c >= 0)
                close(c);
        }
        for (int i = 1; i < n; i++) {
            if (p[i].revents & POLLIN) {
                struct seccomp_notif req;
                struct seccomp_notif_resp resp;
                memset(&req, 0, sizeof req);
                if (ioctl(p[i].fd, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
                    char fstype[32] = "";
                    uint64_t at = req.data.nr == SYS_mount ? req.data.args[2] : req.data.args[0];
                    read_str(req.pid, at, fstype, sizeof fstype);
                    memset(&resp, 0, sizeof resp);
                    resp.id = req.id;
                    if (ioctl(p[i].fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) == 0 && !strcmp(fstype, "debugfs")) {
                        resp.error = -EPERM;
                        FILE *l = fopen(log, "a");
                        if (l) {
                            fprintf(l, "refused %s of debugfs by pid %d\n",
                                    req.data.nr == SYS_mount ? "mount" : "fsopen", req.pid);
                            fclose(l);
                        }
                    } else {
                        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
                    }
                    ioctl(p[i].fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
                }
            } else if (p[i].revents & (POLLHUP | POLLERR | POLLNVAL)) {
                /* Every process of that entry is gone. */
                close(p[i].fd);
                p[i] = p[--n];
                i--;
            }
        }
    }
    return 0;
}

/* ---- properties (the rig's getprop files; the last value wins) ------- */

static int prop(const char *name, char *out, size_t len) {
    const char *files[] = {"/system/build.prop", "/system/etc/prop.default", "/data/property/props"};
    size_t nl = strlen(name);
    int found = 0;
    for (size_t f = 0; f < 3; f++) {
        FILE *fp = fopen(files[f], "r");
        char line[512];
        while (fp && fgets(line, sizeof line, fp)) {
            if (!strncmp(line, name, nl) && line[nl] == '=') {
                snprintf(out, len, "%s", line + nl + 1);
                out[strcspn(out, "\n")] = 0;
                found = 1;
            }
        }
        if (fp)
            fclose(fp);
    }
    return found;
}

/* ---- the app's names ------------------------------------------------- */

static char *arg_start;
static size_t arg_len;

static void set_comm(const char *s) { prctl(PR_SET_NAME, s, 0, 0, 0); }

/* zygote's SetThreadName: the last 15 characters of a dotted name without
 * '@' (else its start), then strlcpy(buf, s, sizeof(buf) - 1): 14 kept. */
static void zygote_set_thread_name(const char *name) {
    size_t len = strlen(name);
    const char *s = name;
    if (len >= 15 && strchr(name, '.') && !strchr(name, '@'))
        s = name + len - 15;
    char buf[16] = "";
    size_t keep = strlen(s) < 14 ? strlen(s) : 14; /* strlcpy(buf, s, 15) */
    memcpy(buf, s, keep);
    set_comm(buf);
}

/* AndroidRuntime::setArgv0(name, true). */
static void set_argv0(const char *name) {
    size_t len = strlen(name);
    set_comm(len < 15 ? name : name + len - 15);
    memset(arg_start, 0, arg_len);
    snprintf(arg_start, arg_len, "%s", name);
}

/* ---- packages and priorities ------------------------------------------ */

/* The package's uid, from /data/system/packages.list as PackageManager
 * writes it (Settings.writePackageListLPr: "NAME UID DEBUGGABLE DATADIR
 * SEINFO GIDS"); -1 when it is not installed. */
static int package_uid(const char *name) {
    FILE *f = fopen(SYS "/packages.list", "r");
    char line[512], n[256];
    int uid = -1, u;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%255s %d", n, &u) == 2 && !strcmp(n, name))
            uid = u;
    if (f)
        fclose(f);
    return uid;
}

/* system/core libsystem/include/system/thread_defs.h and
 * android.os.Process: the values Android gives an app's threads. */
#define PROCESS_PRIORITY_DEFAULT 0
#define PROCESS_PRIORITY_MAX (-20)
#define ANDROID_PRIORITY_DISPLAY (-4)
#define THREAD_PRIORITY_TOP_APP_BOOST (-10)
#define NORM_PRIORITY 5

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

/* ART's SetNativePriority (runtime/thread_android.cc, palette's
 * PaletteSchedSetPriority): the Java priority 1..10 as a nice value,
 * ART's kNiceValues, set on the calling thread. */
static const int art_nice_values[10] = {19, 16, 13, 10, 0, -2, -4, -5, -6, -8};
static void art_set_native_priority(int java_priority) {
    setpriority(PRIO_PROCESS, (id_t)gettid_(), art_nice_values[java_priority - 1]);
}

/* A request to the rig's system_server (binder calls on a phone). */
static void ams(const char *fmt, ...) {
    char line[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    int fd = open(SYS "/ams.fifo", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
        if (write(fd, line, strlen(line)) < 0) {
        }
        close(fd);
    }
}

/* ---- the app ---------------------------------------------------------- */

static char pkg[128], proc_name[192];

static void state(const char *st) {
    char path[256], tmp[272];
    snprintf(path, sizeof path, SYS "/%s.state", pkg);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f) {
        fprintf(f, "%s\n", st);
        fclose(f);
        rename(tmp, path);
    }
}

static void logcat(const char *msg, double t0) {
    double t = now_s();
    FILE *f = fopen(SYS "/logcat.log", "a");
    if (!f)
        return;
    /* logcat -v epoch: "SECONDS.MS  PID  TID PRIO TAG: MESSAGE". */
    fprintf(f, "%.3f %5d %5d I ActivityTaskManager: %s %s/.Main: +%dms\n", t, getpid(), getpid(), msg, pkg,
            (int)((t - t0) * 1000 + 0.5));
    fclose(f);
}

static void drawn(const char *kind) {
    char path[256];
    snprintf(path, sizeof path, SYS "/%s.drawn", pkg);
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%.6f %s\n", now_s(), kind);
        fclose(f);
    }
}

static void read_file(const char *path) {
    char buf[1 << 16];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    while (read(fd, buf, sizeof buf) > 0) {
    }
    close(fd);
}

/* The first line of a small file, "" when missing. */
static void read_line(const char *path, char *out, size_t len) {
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(out, (int)len, f))
            out[0] = 0;
        fclose(f);
    }
    out[strcspn(out, "\n")] = 0;
}

/* The screen is on and unlocked: PowerManager's wakefulness and the
 * keyguard, as the rig's system_server keeps them. */
static int screen_usable(void) {
    char w[32], k[8];
    read_line(SYS "/screen", w, sizeof w);
    read_line(SYS "/keyguard", k, sizeof k);
    return (!w[0] || !strcmp(w, "Awake")) && strcmp(k, "1");
}

/* A Java thread: ART's Thread::CreateCallback sets the thread's own
 * native priority from its java.lang.Thread priority (inherited from its
 * maker: NORM_PRIORITY here) before it runs. */
static void *java_thread(void *name) {
    set_comm(name);
    art_set_native_priority(NORM_PRIORITY);
    for (;;)
        pause();
    return NULL;
}

static void start_java_thread(const char *name) {
    pthread_t t;
    pthread_create(&t, NULL, java_thread, (void *)name);
    pthread_detach(t);
}

/* HWUI's RenderThread (libs/hwui/renderthread/RenderThread.cpp
 * threadLoop: setpriority(PRIO_PROCESS, 0, PRIORITY_DISPLAY)); the app
 * then tells ActivityManager its tid (ActivityThread → setRenderThread),
 * which boosts it while the app is on top. */
static void *render_thread(void *unused) {
    (void)unused;
    set_comm("RenderThread");
    setpriority(PRIO_PROCESS, (id_t)gettid_(), ANDROID_PRIORITY_DISPLAY);
    ams("render %d %d\n", getpid(), gettid_());
    for (;;)
        pause();
    return NULL;
}

#define APP "/system_ext/priv-app/RigApp"
#define ODEX "/data/dalvik-cache/arm64/system_ext@priv-app@RigApp@RigApp.apk@classes.odex"
#define WEBVIEW_APK "/system_ext/app/WebViewRig/WebViewRig.apk"
#define RENDERER "com.android.webview:sandboxed_process0:org.chromium.content.app.SandboxedProcessService0:0"

static void read_data(void) {
    char dir[256];
    snprintf(dir, sizeof dir, "/data/data/%s/settings.db", pkg);
    read_file(dir);
}

/* The activity's first frame after it was made (cold or warm). Behind
 * the keyguard or with the screen off, an activity is made but neither
 * resumed nor drawn. */
static void create_activity(const char *kind, double t0) {
    sleep_ms(20); /* onCreate, inflation */
    read_file(APP "/RigApp.apk");
    if (!screen_usable()) {
        state("STOPPED");
        return;
    }
    state("RESUMED");
    drawn(kind);
    logcat("Displayed", t0);
    read_data();
    logcat("Fully drawn", t0);
}

static int prop_on(const char *name) {
    char v[32] = "";
    return prop(name, v, sizeof v) && (!strcmp(v, "1") || !strcmp(v, "true"));
}

static void app_main(double t0) {
    sleep_ms(10);
    set_argv0("<pre-initialized>"); /* ActivityThread.main */
    sleep_ms(10);
    set_argv0(proc_name); /* handleBindApplication */
    /* attachApplication: ActivityManager starts the activity in it, and
     * OomAdjuster makes it the top app. */
    ams("top %d\n", getpid());
    char ctl[256];
    snprintf(ctl, sizeof ctl, SYS "/%s.ctl", pkg);
    mkfifo(ctl, 0600);
    int c = open(ctl, O_RDWR | O_CLOEXEC);
    /* Its other processes, asked for as the app starts (bindService;
     * WebView's renderer, from webview_zygote). */
    if (prop_on("debug.rig.service")) {
        int z = open(SYS "/zygote.fifo", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (z >= 0) {
            dprintf(z, "%s:service %.6f\n", pkg, t0);
            close(z);
        }
    }
    if (prop_on("debug.rig.webview")) {
        int z = open(SYS "/webview_zygote.fifo", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (z >= 0) {
            dprintf(z, "%s %.6f\n", pkg, t0);
            close(z);
        }
    }
    /* bindApplication's reads: the code a cold start maps and reads. */
    const char *odex = access(ODEX, R_OK) == 0 ? ODEX : APP "/oat/arm64/RigApp.odex";
    read_file(odex);
    read_file(APP "/oat/arm64/RigApp.vdex");
    read_file(APP "/lib/arm64/librigapp.so");
    pthread_t rt;
    pthread_create(&rt, NULL, render_thread, NULL);
    pthread_detach(rt);
    create_activity("COLD", t0);
    /* Commands, one per line. After "home" the activity is paused at once
     * and stopped 300 ms later (the launcher drawn and idle), unless a
     * launch brings it back first. */
    char buf[512];
    size_t have = 0;
    double stop_at = 0;
    for (;;) {
        int wait = -1;
        if (stop_at > 0) {
            wait = (int)((stop_at - now_s()) * 1000);
            if (wait <= 0) {
                state("STOPPED");
                stop_at = 0;
                continue;
            }
        }
        struct pollfd pf = {c, POLLIN, 0};
        if (poll(&pf, 1, wait) <= 0)
            continue;
        ssize_t n = read(c, buf + have, sizeof buf - 1 - have);
        if (n <= 0)
            break;
        have += n;
        buf[have] = 0;
        char *nl;
        while ((nl = strchr(buf, '\n'))) {
            *nl = 0;
            double t = 0;
            char cmd[32] = "";
            sscanf(buf, "%31s %lf", cmd, &t);
            if (!strcmp(cmd, "home")) {
                state("PAUSED");
                stop_at = now_s() + 0.3;
            } else if (!strcmp(cmd, "front")) {
                stop_at = 0;
                sleep_ms(5); /* a frame from memory: nothing read, nothing logged */
                if (screen_usable()) {
                    state("RESUMED");
                    drawn("HOT");
                }
            } else if (!strcmp(cmd, "recreate")) {
                stop_at = 0;
                state("DESTROYED");
                create_activity("WARM", t);
            }
            have -= (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, have + 1);
        }
    }
    _exit(0);
}

/* A `PKG:service` process: the service's own reads, then it stays. */
static void service_main(void) {
    start_java_thread("Binder:service");
    char path[256];
    snprintf(path, sizeof path, "/data/data/%s/cache.db", pkg);
    read_file(path);
    for (;;)
        pause();
}

/* WebView's renderer: the WebView APK's code, then it stays. */
static void renderer_main(void) {
    start_java_thread("Chrome_ChildIOT");
    read_file(WEBVIEW_APK);
    for (;;)
        pause();
}

/* Another package's process whose names share the app's last 15
 * characters (a broadcast receiver's start): named, then gone. */
static void decoy_main(void) {
    set_argv0("<pre-initialized>");
    sleep_ms(5);
    set_argv0(proc_name);
    sleep_ms(3000);
    _exit(0);
}

/* init.rc: "setrlimit nice 40 40": every process may take any nice on
 * its own threads (zygote's reset, ART's priorities lower a nice iolab
 * raised). Raising a hard limit needs CAP_SYS_RESOURCE, which a
 * container may not grant: then the app keeps CAP_SYS_NICE through its
 * setresuid instead, which allows the same on its own threads (and more,
 * which the rig's apps do not use). */
static int nice_rlimit_set;

static void android_rlimits(void) {
    struct rlimit r = {40, 40};
    nice_rlimit_set = setrlimit(RLIMIT_NICE, &r) == 0;
}

static void keep_cap_sys_nice(void) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    d[0].effective = d[0].permitted = 1u << CAP_SYS_NICE;
    if (syscall(SYS_capset, &h, d))
        die("capset");
}

enum role { ROLE_APP, ROLE_SERVICE, ROLE_RENDERER, ROLE_DECOY };

/* zygote's child, from fork (or a USAP's wake-up) to the app: the
 * launch line is "NAME T0" (NAME: PKG, or PKG:service); `isolated` is
 * the isolated uid webview_zygote gives a renderer (0: none). */
static void specialize(const char *launch, int isolated, int decoy) {
    double t0 = now_s();
    char want[160] = "";
    sscanf(launch, "%159s %lf", want, &t0);
    snprintf(pkg, sizeof pkg, "%.*s", (int)strcspn(want, ":"), want);
    enum role role = decoy ? ROLE_DECOY : isolated ? ROLE_RENDERER : strchr(want, ':') ? ROLE_SERVICE : ROLE_APP;
    if (role == ROLE_RENDERER)
        snprintf(proc_name, sizeof proc_name, "%s", RENDERER);
    else if (role == ROLE_SERVICE || role == ROLE_DECOY ||
             !prop("debug.rig.process_name", proc_name, sizeof proc_name) || !proc_name[0])
        snprintf(proc_name, sizeof proc_name, "%s", want);
    int uid = isolated ? isolated : package_uid(pkg);
    sleep_ms(15); /* SpecializeCommon: gids, rlimits, mounts, SELinux */
    /* SpecializeCommon: setresgid/setresuid come before SetThreadName:
     * when its name appears, the process is the package's uid. */
    if (uid >= 0 && !nice_rlimit_set)
        prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
    if (uid >= 0 && (setresgid(uid, uid, uid) || setresuid(uid, uid, uid)))
        die("setresuid");
    if (uid >= 0 && !nice_rlimit_set)
        keep_cap_sys_nice();
    zygote_set_thread_name(proc_name);
    sleep_ms(2); /* the rest of SpecializeCommon, postForkChild hooks */
    /* SpecializeCommon: "Reset the process priority to the default value." */
    setpriority(PRIO_PROCESS, 0, PROCESS_PRIORITY_DEFAULT);
    /* Zygote.forkAndSpecialize, in the child: "Set the Java Language
     * thread priority to the default value for new apps." */
    art_set_native_priority(NORM_PRIORITY);
    if (role == ROLE_DECOY)
        decoy_main();
    /* ZygoteHooks.postForkCommon: ART's daemons, Java threads. */
    start_java_thread("HeapTaskDaemon");
    start_java_thread("ReferenceQueueD");
    start_java_thread("FinalizerDaemon");
    start_java_thread("FinalizerWatchd");
    /* ZygoteConnection.handleChildProc: Zygote.setAppProcessName. */
    set_argv0(proc_name);
    if (role == ROLE_SERVICE)
        service_main();
    if (role == ROLE_RENDERER)
        renderer_main();
    app_main(t0);
}

struct usap {
    pid_t pid;
    int fd;
};

static struct usap pool[USAP_POOL];
static int pooled;

static int usap_enabled(void) {
    char v[32] = "";
    return prop(USAP_PROP, v, sizeof v) && !strcmp(v, "true");
}

static void fill_pool(int zfd) {
    while (usap_enabled() && pooled < USAP_POOL) {
        int p[2];
        if (pipe2(p, O_CLOEXEC))
            return;
        pid_t pid = fork();
        if (pid == 0) {
            close(zfd);
            close(p[1]);
            for (int i = 0; i < pooled; i++)
                close(pool[i].fd);
            /* Zygote.childMain: setArgV0("usap64"), then boostUsapPriority
             * (PROCESS_PRIORITY_MAX until the specialisation resets it). */
            set_argv0("usap64");
            setpriority(PRIO_PROCESS, 0, PROCESS_PRIORITY_MAX);
            char launch[256];
            ssize_t n = read(p[0], launch, sizeof launch - 1);
            if (n <= 0)
                _exit(0);
            launch[n] = 0;
            close(p[0]);
            specialize(launch, 0, 0);
        }
        close(p[0]);
        pool[pooled].pid = pid;
        pool[pooled].fd = p[1];
        pooled++;
    }
}

/* The app's main process in PKG.pid; its other processes (a service, a
 * renderer) added to PKG.procs: `am force-stop` ends them all. */
static void record_pid(const char *launch, pid_t pid) {
    char name[160] = "", path[256];
    sscanf(launch, "%159s", name);
    int other = strchr(name, ':') != NULL;
    name[strcspn(name, ":")] = 0;
    snprintf(path, sizeof path, SYS "/%s.%s", name, other ? "procs" : "pid");
    FILE *f = fopen(path, other ? "a" : "w");
    if (f) {
        fprintf(f, "%d\n", pid);
        fclose(f);
    }
}

/* ForkCommon's child (nativeForkAndSpecialize passes is_priority_fork):
 * setpriority(PRIO_PROCESS, 0, PROCESS_PRIORITY_MAX) until
 * SpecializeCommon resets it. */
static pid_t fork_child(const char *line, FILE *in, int isolated, int decoy) {
    pid_t pid = fork();
    if (pid == 0) {
        setpriority(PRIO_PROCESS, 0, PROCESS_PRIORITY_MAX);
        fclose(in);
        for (int i = 0; i < pooled; i++)
            close(pool[i].fd);
        specialize(line, isolated, decoy);
    }
    return pid;
}

static FILE *open_fifo(const char *path) {
    mkdir(SYS, 01777);
    chmod(SYS, 01777);
    /* Asked by the apps (as their own uids) as well as by am: on a phone
     * system_server asks zygote over its socket on the app's behalf. */
    mkfifo(path, 0666);
    chmod(path, 0666);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        die(path);
    return fdopen(fd, "r");
}

static int zygote(void) {
    signal(SIGCHLD, SIG_IGN); /* children reaped by the kernel */
    android_rlimits();
    FILE *in = open_fifo(SYS "/zygote.fifo");
    int zfd = fileno(in);
    set_comm("main");
    set_argv0("zygote64");
    set_comm("main");
    char line[256];
    fill_pool(zfd);
    while (fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0] && strcmp(line, "refresh")) {
            /* Another package, whose names share the app's, starting
             * just before it. */
            char decoy[128] = "", first[160] = "";
            sscanf(line, "%159s", first);
            if (!strchr(first, ':') && prop("debug.rig.decoy", decoy, sizeof decoy) && decoy[0]) {
                char d[256];
                snprintf(d, sizeof d, "%s %.6f", decoy, now_s());
                fork_child(d, in, 0, 1);
                sleep_ms(5);
            }
            if (usap_enabled() && pooled > 0) {
                struct usap u = pool[--pooled];
                record_pid(line, u.pid);
                if (write(u.fd, line, strlen(line)) < 0) {
                }
                close(u.fd);
            } else {
                record_pid(line, fork_child(line, in, 0, 0));
            }
        }
        fill_pool(zfd);
    }
    return 0;
}

/* webview_zygote: a renderer per request, each an isolated uid. On a
 * phone it is a child zygote of zygote64 running as uid 1053
 * (AID_WEBVIEW_ZYGOTE) with CAP_SETUID kept; the rig's runs as root. */
static int webview_zygote(void) {
    signal(SIGCHLD, SIG_IGN);
    android_rlimits();
    FILE *in = open_fifo(SYS "/webview_zygote.fifo");
    set_argv0("webview_zygote");
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = 0;
        if (!line[0])
            continue;
        char owner[128] = "", path[256];
        sscanf(line, "%127s", owner);
        pid_t pid = fork_child(line, in, 99000 + (n++ % 1000), 0);
        snprintf(path, sizeof path, SYS "/%s.procs", owner);
        FILE *f = fopen(path, "a");
        if (f) {
            fprintf(f, "%d\n", pid);
            fclose(f);
        }
    }
    return 0;
}

/* ---- system_server: the top app's boost, the screen ------------------- */

static pid_t top_pid;
static pid_t render_of[64][2];

static pid_t render_tid(pid_t pid) {
    for (int i = 0; i < 64; i++)
        if (render_of[i][0] == pid)
            return render_of[i][1];
    return 0;
}

/* OomAdjuster.applyOomAdjLSP: entering SCHED_GROUP_TOP_APP boosts the
 * main and render threads to THREAD_PRIORITY_TOP_APP_BOOST; leaving it
 * puts the main thread back to 0 and the render thread to
 * THREAD_PRIORITY_DISPLAY. */
static void set_top(pid_t pid) {
    if (top_pid && top_pid != pid) {
        setpriority(PRIO_PROCESS, (id_t)top_pid, 0);
        if (render_tid(top_pid))
            setpriority(PRIO_PROCESS, (id_t)render_tid(top_pid), ANDROID_PRIORITY_DISPLAY);
    }
    top_pid = pid;
    if (pid) {
        setpriority(PRIO_PROCESS, (id_t)pid, THREAD_PRIORITY_TOP_APP_BOOST);
        if (render_tid(pid))
            setpriority(PRIO_PROCESS, (id_t)render_tid(pid), THREAD_PRIORITY_TOP_APP_BOOST);
    }
}

/* The last value of KEY in the rig's settings table NS (global, system). */
static long setting(const char *ns, const char *key, long dflt) {
    char path[128], line[256];
    snprintf(path, sizeof path, SYS "/settings_%s", ns);
    FILE *f = fopen(path, "r");
    size_t kl = strlen(key);
    long v = dflt;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == '=')
            v = atol(line + kl + 1);
    if (f)
        fclose(f);
    return v;
}

static void write_line(const char *path, const char *v) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f) {
        fprintf(f, "%s\n", v);
        fclose(f);
        chmod(tmp, 0644);
        rename(tmp, path);
    }
}

/* PowerManagerService: the screen goes off screen_off_timeout ms after
 * the last user activity (an input event), unless it is kept on while
 * plugged in (stay_on_while_plugged_in: BatteryManager's plug types, AC
 * 1, USB 2, wireless 4, against the rig's debug.rig.plugged); the
 * keyguard comes with it, and the top app stops being the top. */
static void screen_tick(void) {
    char w[32], last[64], plugged[16] = "usb";
    read_line(SYS "/screen", w, sizeof w);
    if (w[0] && strcmp(w, "Awake"))
        return;
    prop("debug.rig.plugged", plugged, sizeof plugged);
    long plug = !strcmp(plugged, "ac") ? 1 : !strcmp(plugged, "usb") ? 2 : !strcmp(plugged, "wireless") ? 4 : 0;
    if (setting("global", "stay_on_while_plugged_in", 0) & plug)
        return;
    read_line(SYS "/user_activity", last, sizeof last);
    double since = last[0] ? atof(last) : 0;
    if (since == 0) {
        snprintf(last, sizeof last, "%.3f", now_s());
        write_line(SYS "/user_activity", last);
        return;
    }
    if ((now_s() - since) * 1000 < setting("system", "screen_off_timeout", 60000))
        return;
    write_line(SYS "/screen", "Asleep");
    write_line(SYS "/keyguard", "1");
    /* The resumed activity pauses and stops, as after the home key. */
    if (top_pid) {
        DIR *d = opendir(SYS);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            size_t l = strlen(e->d_name);
            char path[512], st[32];
            if (l < 7 || strcmp(e->d_name + l - 6, ".state"))
                continue;
            snprintf(path, sizeof path, SYS "/%s", e->d_name);
            read_line(path, st, sizeof st);
            if (strcmp(st, "RESUMED"))
                continue;
            snprintf(path, sizeof path, SYS "/%.*s.ctl", (int)(l - 6), e->d_name);
            int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
            if (fd >= 0) {
                if (write(fd, "home\n", 5) < 0) {
                }
                close(fd);
            }
        }
        if (d)
            closedir(d);
        set_top(0);
    }
}

static int system_server(void) {
    signal(SIGCHLD, SIG_DFL);
    FILE *in = open_fifo(SYS "/ams.fifo");
    chmod(SYS "/ams.fifo", 0666);
    set_argv0("system_server");
    int fd = fileno(in);
    char buf[512];
    size_t have = 0;
    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        int r = poll(&pf, 1, 100);
        screen_tick();
        if (r <= 0)
            continue;
        if (have >= sizeof buf - 1)
            have = 0; /* a request without its newline: dropped */
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n <= 0)
            continue;
        have += n;
        buf[have] = 0;
        char *nl;
        while ((nl = strchr(buf, '\n'))) {
            *nl = 0;
            char cmd[16] = "";
            int pid = 0, tid = 0;
            sscanf(buf, "%15s %d %d", cmd, &pid, &tid);
            if (!strcmp(cmd, "top")) {
                set_top(pid);
            } else if (!strcmp(cmd, "bg") && pid == top_pid) {
                set_top(0);
            } else if (!strcmp(cmd, "render")) {
                int i = 0;
                while (i < 63 && render_of[i][0] && render_of[i][0] != pid && kill(render_of[i][0], 0) == 0)
                    i++;
                render_of[i][0] = pid;
                render_of[i][1] = tid;
                if (pid == top_pid)
                    setpriority(PRIO_PROCESS, (id_t)tid, THREAD_PRIORITY_TOP_APP_BOOST);
            }
            have -= (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, have + 1);
        }
    }
    return 0;
}

/* ---- Magisk's su ------------------------------------------------------ */

#define MAGISK_SOCK "/dev/socket/magisk"

static int su_client(int argc, char **argv) {
    char cmd[8192] = "";
    int uid = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-c")) {
            /* su.cpp: -c takes the rest of the line, joined by spaces. */
            for (int j = i + 1; j < argc; j++) {
                if (cmd[0])
                    strncat(cmd, " ", sizeof cmd - strlen(cmd) - 1);
                strncat(cmd, argv[j], sizeof cmd - strlen(cmd) - 1);
            }
            break;
        }
        if (argv[i][0] != '-')
            uid = atoi(argv[i]);
    }
    int s = connect_unix(MAGISK_SOCK);
    if (s < 0) {
        fprintf(stderr, "su: cannot connect to the Magisk daemon\n");
        return 1;
    }
    char req[8300];
    int len = snprintf(req, sizeof req, "%d\n%s", uid, cmd);
    uint32_t n = len;
    if (write(s, &n, 4) != 4 || write(s, req, len) != len)
        return 1;
    /* stdin, stdout, stderr themselves, as su_client sends them. */
    for (int fd = 0; fd < 3; fd++)
        if (send_fd(s, fd, "F", 1))
            return 1;
    int code = 1;
    if (read_full(s, &code, sizeof code))
        code = 1;
    return code;
}

static void *su_wait(void *arg) {
    int *a = arg;
    int client = a[0];
    pid_t child = a[1];
    free(a);
    int st = 0;
    while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
    }
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (write(client, &code, sizeof code) < 0) {
        /* the client is gone (its shell hung up): nothing to tell */
    }
    close(client);
    return NULL;
}

static int magiskd(void) {
    signal(SIGPIPE, SIG_IGN);
    mkdir("/dev/socket", 0755);
    int srv = listen_unix(MAGISK_SOCK, 0666);
    setsid();
    printf("ready\n");
    fflush(stdout);
    for (;;) {
        int c = accept4(srv, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        uint32_t n = 0;
        char req[8300];
        if (read_full(c, &n, 4) || n >= sizeof req || read_full(c, req, n)) {
            close(c);
            continue;
        }
        req[n] = 0;
        int fds[3], got = 0;
        for (int i = 0; i < 3; i++) {
            char tag;
            if (recv_fds(c, &fds[i], 1, &tag, 1) == 1)
                got++;
        }
        if (got != 3) {
            close(c);
            continue;
        }
        char *cmd = strchr(req, '\n');
        int uid = atoi(req);
        cmd = cmd ? cmd + 1 : "";
        pid_t pid = fork();
        if (pid == 0) {
            /* su_daemon: the root process in its own session, on the
             * client's own descriptors. */
            setsid();
            for (int i = 0; i < 3; i++)
                dup2(fds[i], i);
            signal(SIGPIPE, SIG_DFL);
            if (setuid(uid))
                _exit(1);
            if (cmd[0])
                execl("/system/bin/sh", "sh", "-c", cmd, (char *)NULL);
            else
                execl("/system/bin/sh", "sh", (char *)NULL);
            _exit(127);
        }
        for (int i = 0; i < 3; i++)
            close(fds[i]);
        int *a = malloc(2 * sizeof(int));
        a[0] = c;
        a[1] = pid;
        pthread_t t;
        pthread_create(&t, NULL, su_wait, a);
        pthread_detach(t);
    }
}

int main(int argc, char **argv) {
    arg_start = argv[0];
    arg_len = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) - argv[0]);
    const char *me = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    if (!strcmp(me, "su"))
        return su_client(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "enter"))
        return enter(argc, argv);
    if (argc == 4 && !strcmp(argv[1], "seccomp-supervisor"))
        return supervisor(argv[2], argv[3]);
    if (argc >= 2 && !strcmp(argv[1], "zygote"))
        return zygote();
    if (argc >= 2 && !strcmp(argv[1], "webview_zygote"))
        return webview_zygote();
    if (argc >= 2 && !strcmp(argv[1], "system_server"))
        return system_server();
    if (argc >= 2 && !strcmp(argv[1], "magiskd"))
        return magiskd();
    fprintf(stderr, "usage: rig enter|seccomp-supervisor|zygote|webview_zygote|system_server|magiskd ... (or as su)\n");
    return 2;
}

/* file_read.c - a whole small file into memory (see file_read.h). */
#include "runtime/format/file_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum rt_status rt_read_file(const char *path, const char *label, size_t max, char **out, size_t *len,
                            struct rt_error *err)
{
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return rt_error_set(err, errno == ENOENT ? RT_ERR_NOT_FOUND : RT_ERR_IO, "%s: cannot open (%s)", label,
                            strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode) || (size_t)sb.st_size > max) {
        fclose(f);
        return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: not a regular file or larger than %zu bytes", label, max);
    }
    char *buf = malloc((size_t)sb.st_size + 1);
    if (!buf) {
        fclose(f);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    size_t n = fread(buf, 1, (size_t)sb.st_size, f);
    fclose(f);
    if (n != (size_t)sb.st_size) {
        free(buf);
        return rt_error_set(err, RT_ERR_IO, "%s: short read", label);
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return RT_OK;
}

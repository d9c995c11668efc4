/* h5io.c - HDF5 I/O; see h5io.h.  Files (open, create, commit, close,
 * the stdin image and mapped bytes), errors and the shared helpers; the
 * datasets are in h5io_dset.c, attributes and listing in h5io_attr.c.
 * Only h5io*.c include hdf5.h (through io/h5io_int.h).
 *
 * Every hid_t starts at -1 and is closed at one `done:` label; HDF5's own
 * error printing is off and its innermost message is folded into ours.
 */
#include "io/h5io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/h5io_int.h"
#include "util/ofile.h"

static void quiet(void)
{
	static int done;
	if (!done) {
		/* no library shutdown at exit: after a failed H5Fclose (full disk)
		 * HDF5 1.10's own atexit cleanup crashes on the half-closed file */
		H5dont_atexit();
		H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
		done = 1;
	}
}

/* The innermost (most specific) description on HDF5's error stack, or,
 * when one entry carries the system error (the file driver's "errno = 28,
 * error message = 'No space left on device'"), that one. */
typedef struct walk_buf { char first[1024], sys[1024]; } walk_buf;

static herr_t walk_cb(unsigned n, const H5E_error2_t *err, void *data)
{
	walk_buf *b = data;
	if (n == 0 && err->desc)
		snprintf(b->first, sizeof b->first, "%s", err->desc);
	if (!b->sys[0] && err->desc && strstr(err->desc, "errno ="))
		snprintf(b->sys, sizeof b->sys, "%s", err->desc);
	return 0;
}

const char *h5i_msg(void)
{
	static char buf[1024];
	walk_buf b;
	b.first[0] = b.sys[0] = '\0';
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &b);
	H5Eclear2(H5E_DEFAULT);
	snprintf(buf, sizeof buf, "%s", b.sys[0] ? b.sys : b.first);
	/* A failed system call: keep only the system's words, e.g.
	 * "file write failed: time = ..., errno = 28, error message = 'No space
	 * left on device', ..." -> "No space left on device". */
	char *m = strstr(buf, "error message = '");
	if (m) {
		m += strlen("error message = '");
		char *q = strchr(m, '\'');
		if (q)
			*q = '\0';
		memmove(buf, m, strlen(m) + 1);
	}
	return buf;
}

/* Seen through "FILE:PATH: what (HDF5: detail)". */
int h5i_fail(ss_err *e, const ss_h5 *f, const char *path, const char *what)
{
	const char *m = h5i_msg();
	if (!*m)
		return ss_err_set(e, "%s:%s: %s", f->name, path, what);
	return ss_err_set(e, "%s:%s: %s (HDF5: %s)", f->name, path, what, m);
}

/* Close an open id of any kind used here; -1 (not opened) is ignored, so
 * every done: label is a plain list of the ids. */
void h5i_close_id(hid_t id)
{
	if (id < 0)
		return;
	switch (H5Iget_type(id)) {
	case H5I_DATASET: H5Dclose(id); break;
	case H5I_DATATYPE: H5Tclose(id); break;
	case H5I_DATASPACE: H5Sclose(id); break;
	case H5I_GENPROP_LST: H5Pclose(id); break;
	case H5I_ATTR: H5Aclose(id); break;
	case H5I_GROUP: H5Gclose(id); break;
	default: H5Idec_ref(id); break;
	}
}

const char *h5_name(const ss_h5 *f) { return f->name; }

static ss_h5 *new_h5(const char *name, ss_err *e)
{
	ss_h5 *f = ss_calloc(1, sizeof *f, "HDF5 handle", e);
	if (!f)
		return NULL;
	f->fid = -1;
	f->name = ss_strdup(name, e);
	if (!f->name) {
		free(f);
		return NULL;
	}
	return f;
}

static void free_h5(ss_h5 *f)
{
	if (!f)
		return;
	free(f->name);
	free(f->path);
	free(f->tmp);
	h5_buffers_free(f->buf);
	free(f);
}

/* Read all of stdin into memory. */
static int slurp_stdin(void **buf, size_t *len, ss_err *e)
{
	size_t cap = 1 << 20, n = 0;
	char *b = malloc(cap);
	if (!b)
		return ss_err_set(e, "<stdin>: out of memory");
	for (;;) {
		if (n == cap) {
			if (cap > SIZE_MAX / 2) {
				free(b);
				return ss_err_set(e, "<stdin>: input too large");
			}
			char *nb = realloc(b, cap * 2);
			if (!nb) {
				free(b);
				return ss_err_set(e, "<stdin>: out of memory reading %zu bytes", cap * 2);
			}
			b = nb;
			cap *= 2;
		}
		ssize_t r = read(0, b + n, cap - n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			int err = errno;
			free(b);
			return ss_err_errno(e, err, "<stdin>: read error");
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*buf = b;
	*len = n;
	return 0;
}

/* File-image callbacks that let HDF5 read our buffer in place: every
 * "allocation" is the buffer itself, copies onto itself are no-ops, frees
 * do nothing (the buffer is ours).  Read-only, so nothing ever grows.
 * (H5LTopen_file_image does the same but leaks when the open fails.) */
static void *img_malloc(size_t size, H5FD_file_image_op_t op, void *ud)
{
	img_udata *u = ud;
	return size <= u->len ? u->buf : NULL;
}
static void *img_memcpy(void *dest, const void *src, size_t size, H5FD_file_image_op_t op,
                        void *ud)
{
	if (dest != src)
		memmove(dest, src, size);
	return dest;
}
static void *img_realloc(void *ptr, size_t size, H5FD_file_image_op_t op, void *ud)
{
	return NULL;
}
static herr_t img_free(void *ptr, H5FD_file_image_op_t op, void *ud) { return 0; }
static void *img_udata_copy(void *ud) { return ud; }
static herr_t img_udata_free(void *ud) { return 0; }

/* A name for an in-memory file: it only has to be unique among open files. */
static void mem_name(char *nm, size_t cap, const char *base)
{
	static unsigned seq;
	snprintf(nm, cap, "%s.%d.%u", base, (int)getpid(), seq++);
}

/* Map a regular, non-empty file privately (copy on write); NULL if not. */
static void *map_private(int fd, size_t *len)
{
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0)
		return NULL;
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		return NULL;
	*len = (size_t)st.st_size;
	return m;
}

static hid_t open_image(void *buf, size_t len, img_udata *u)
{
	u->buf = buf;
	u->len = len;
	H5FD_file_image_callbacks_t cb = {img_malloc, img_memcpy, img_realloc, img_free,
	                                  img_udata_copy, img_udata_free, u};
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fid = -1;
	if (fapl >= 0 && H5Pset_fapl_core(fapl, 1 << 20, 0) >= 0 &&
	    H5Pset_file_image_callbacks(fapl, &cb) >= 0 && H5Pset_file_image(fapl, buf, len) >= 0) {
		char nm[64];
		mem_name(nm, sizeof nm, "<stdin>");
		fid = H5Fopen(nm, H5F_ACC_RDONLY, fapl);
	}
	h5i_close_id(fapl);
	return fid;
}

static const unsigned char h5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

/* The stdin image: stdin mapped when it is a regular file, else read. */
static int open_stdin(ss_h5 *f, ss_err *e)
{
	size_t len = 0;
	void *img = NULL;
	f->buf = ss_calloc(1, sizeof *f->buf, "file image", e);
	if (!f->buf)
		return -1;
	f->buf->refs = 1;
	if (lseek(0, 0, SEEK_CUR) == 0 && (img = map_private(0, &len)))
		f->buf->image_mapped = 1;
	if (!img && slurp_stdin(&img, &len, e))
		return -1;
	f->buf->image = img;
	f->buf->image_len = len;
	if (len == 0)
		return ss_err_set(e, "<stdin>: empty input, expected an HDF5 file image");
	if (len < 8 || memcmp(img, h5_signature, 8))
		return ss_err_set(e, "<stdin>: not an HDF5 file (no HDF5 signature)");
	/* The buffer stays ours (freed in h5_close); HDF5 neither copies nor frees it. */
	f->fid = open_image(img, len, &f->img_ud);
	if (f->fid < 0)
		return h5i_fail(e, f, "/", "cannot open HDF5 image (truncated or corrupt?)");
	return 0;
}

static int open_file(ss_h5 *f, const char *path, ss_err *e)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return ss_err_set(e, "%s: is a directory, expected an HDF5 file", path);
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return ss_err_errno(e, errno, "%s", path);
	unsigned char sig[8];
	size_t got = fread(sig, 1, 8, fp);
	fclose(fp);
	if (got == 0)
		return ss_err_set(e, "%s: empty file, expected HDF5", path);
	/* HDF5 also looks for a signature at 512, 1024 ... (user block);
	 * let it decide when the first bytes are not the signature. */
	if (H5Fis_hdf5(path) <= 0) {
		H5Eclear2(H5E_DEFAULT);
		return ss_err_set(e, "%s: not an HDF5 file", path);
	}
	f->fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	if (f->fid < 0)
		return h5i_fail(e, f, "/", "cannot open (truncated or corrupt?)");
	return 0;
}

int h5_open(ss_h5 **out, const char *path, ss_err *e)
{
	quiet();
	*out = NULL;
	int in = !strcmp(path, "-");
	ss_h5 *f = new_h5(in ? "<stdin>" : path, e);
	if (!f)
		return -1;
	if (in ? open_stdin(f, e) : open_file(f, path, e)) {
		free_h5(f);
		return -1;
	}
	*out = f;
	return 0;
}

int h5_create(ss_h5 **out, const char *path, ss_err *e)
{
	quiet();
	*out = NULL;
	ss_out_kind kind;
	char *real;
	if (ss_out_resolve(path, &kind, &real, e))
		return -1;
	ss_h5 *f = new_h5(kind == SS_OUT_STDOUT ? "<stdout>" : path, e);
	if (!f) {
		free(real);
		return -1;
	}
	f->writing = 1;
	f->path = real;
	hid_t fapl = -1;
	if (kind != SS_OUT_FILE) {
		f->to_stdout = 1;
		f->out_fd = 1;
		if (kind == SS_OUT_STREAM && ss_out_stream_open(real, &f->out_fd, e))
			goto fail;
		fapl = H5Pcreate(H5P_FILE_ACCESS);
		if (fapl < 0 || H5Pset_fapl_core(fapl, 1 << 20, 0) < 0) {
			h5i_fail(e, f, "/", "cannot set up the in-memory file");
			goto fail;
		}
		char nm[64];
		mem_name(nm, sizeof nm, "<stdout>");
		f->fid = H5Fcreate(nm, H5F_ACC_EXCL, H5P_DEFAULT, fapl);
		if (f->fid < 0) {
			h5i_fail(e, f, "/", "cannot create the in-memory file");
			goto fail;
		}
		H5Pclose(fapl);
	} else {
		int fd = -1;
		if (ss_tmp_create(real, &f->tmp, &fd, e))
			goto fail;
		close(fd);
		f->fid = H5Fcreate(f->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
		if (f->fid < 0) {
			h5i_fail(e, f, "/", "cannot create");
			goto fail;
		}
	}
	*out = f;
	return 0;
fail:
	h5i_close_id(fapl);
	h5_close(f);
	return -1;
}

int h5_commit(ss_h5 *f, ss_err *e)
{
	int rc = -1;
	char *img = NULL;
	if (!f->writing) {
		ss_err_set(e, "%s: not opened for writing", f->name);
		goto done;
	}
	if (f->to_stdout) {
		if (H5Fflush(f->fid, H5F_SCOPE_GLOBAL) < 0) {
			h5i_fail(e, f, "/", "cannot flush");
			goto done;
		}
		ssize_t n = H5Fget_file_image(f->fid, NULL, 0);
		if (n < 0) {
			h5i_fail(e, f, "/", "cannot get the file image");
			goto done;
		}
		img = malloc((size_t)n ? (size_t)n : 1);
		if (!img) {
			ss_err_set(e, "%s: out of memory for a %zd-byte image", f->name, n);
			goto done;
		}
		if (H5Fget_file_image(f->fid, img, (size_t)n) < 0) {
			h5i_fail(e, f, "/", "cannot get the file image");
			goto done;
		}
		H5Fclose(f->fid);
		f->fid = -1;
		/* stdio may hold buffered bytes for stdout; keep the order. */
		if (f->out_fd == 1 && fflush(stdout) != 0) {
			ss_err_errno(e, errno, "<stdout>: write error");
			goto done;
		}
		if (ss_write_all(f->out_fd, img, (size_t)n, f->name, e))
			goto done;
		if (f->out_fd != 1) {
			int c = close(f->out_fd);
			f->out_fd = -1;
			if (c != 0) {
				ss_err_errno(e, errno, "%s: write error", f->name);
				goto done;
			}
		}
		rc = 0;
	} else {
		herr_t s = H5Fclose(f->fid);
		f->fid = -1;
		if (s < 0) {
			h5i_fail(e, f, "/", "cannot close (disk full?)");
			goto done;
		}
		if (ss_fsync_path(f->tmp, f->name, e))
			goto done;
		if (rename(f->tmp, f->path) != 0) {
			ss_err_errno(e, errno, "%s: cannot rename into place", f->name);
			goto done;
		}
		ss_tmp_unregister(f->tmp);
		free(f->tmp);
		f->tmp = NULL;
		rc = 0;
	}
done:
	free(img);
	h5_close(f);
	return rc;
}

void h5_close(ss_h5 *f)
{
	if (!f)
		return;
	if (f->fid >= 0)
		H5Fclose(f->fid);
	H5Eclear2(H5E_DEFAULT);
	if (f->to_stdout && f->out_fd > 1)
		close(f->out_fd);
	if (f->tmp) {
		unlink(f->tmp);
		ss_tmp_unregister(f->tmp);
	}
	free_h5(f);
}

/* ---- objects ---------------------------------------------------------- */

int h5_exists(ss_h5 *f, const char *path)
{
	if (!strcmp(path, "/"))
		return 1;
	char buf[1024];
	size_t n = strlen(path);
	if (n >= sizeof buf)
		return 0;
	memcpy(buf, path, n + 1);
	/* H5Lexists needs every intermediate link to exist: check each prefix. */
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] == '/' || buf[i] == '\0') {
			char c = buf[i];
			buf[i] = '\0';
			htri_t r = H5Lexists(f->fid, buf, H5P_DEFAULT);
			if (r > 0)
				r = H5Oexists_by_name(f->fid, buf, H5P_DEFAULT);
			buf[i] = c;
			if (r <= 0) {
				H5Eclear2(H5E_DEFAULT);
				return 0;
			}
		}
	}
	return 1;
}

/* ---- the file's bytes ---------------------------------------------- */

/* The bytes of the file: the stdin image, or the file mapped privately
 * (copy on write, so a borrowed view may be modified like a read buffer). */
const unsigned char *h5i_file_bytes(ss_h5 *f, size_t *len)
{
	if (f->buf && f->buf->image) {
		*len = f->buf->image_len;
		return f->buf->image;
	}
	if (f->writing || f->map_failed)
		return NULL;
	if (!f->buf) {
		f->map_failed = 1;
		int fd = open(f->name, O_RDONLY);
		if (fd < 0)
			return NULL;
		size_t n = 0;
		void *m = map_private(fd, &n);
		close(fd);
		if (!m)
			return NULL;
		f->buf = calloc(1, sizeof *f->buf);
		if (!f->buf) {
			munmap(m, n);
			return NULL;
		}
		f->buf->refs = 1;
		f->buf->map = m;
		f->buf->map_len = n;
		f->map_failed = 0;
	}
	*len = f->buf->map_len;
	return f->buf->map;
}

ss_h5_buf *h5_take_buffers(ss_h5 *f)
{
	if (f->buf)
		f->buf->refs++;
	return f->buf;
}

void h5_buffers_free(ss_h5_buf *b)
{
	if (!b || --b->refs > 0)
		return;
	/* HDF5 was told neither to copy nor to free the image */
	if (b->image_mapped)
		munmap(b->image, b->image_len);
	else
		free(b->image);
	if (b->map)
		munmap(b->map, b->map_len);
	free(b);
}

/* ---- types shared by datasets and attributes -------------------- */

void h5_free_strings(char **strs, size_t n)
{
	if (!strs)
		return;
	for (size_t i = 0; i < n; i++)
		free(strs[i]);
	free(strs);
}

/* The memory type to read strings stored as ft: same character set,
 * variable length or ft's fixed width (NUL-padded). */
hid_t h5i_str_memtype(hid_t ft, int var)
{
	hid_t mt = H5Tcopy(H5T_C_S1);
	H5Tset_cset(mt, H5Tget_cset(ft));
	if (var) {
		H5Tset_size(mt, H5T_VARIABLE);
	} else {
		H5Tset_size(mt, H5Tget_size(ft));
		H5Tset_strpad(mt, H5T_STR_NULLPAD);
	}
	return mt;
}

hid_t h5i_vlen_utf8(void)
{
	hid_t t = H5Tcopy(H5T_C_S1);
	if (t >= 0) {
		H5Tset_size(t, H5T_VARIABLE);
		H5Tset_cset(t, H5T_CSET_UTF8);
	}
	return t;
}

/* h5io_int.h - private to the HDF5 module (h5io.c files and errors,
 * h5io_dset.c datasets, h5io_attr.c attributes); no other file includes it.
 * The handle's layout and the helpers the three files share.
 */
#ifndef SS_H5IO_INT_H
#define SS_H5IO_INT_H

#include <hdf5.h>

#include "io/h5io.h"

typedef struct { void *buf; size_t len; } img_udata; /* see open_image */

struct ss_h5 {
	hid_t fid;
	char *name;      /* for messages */
	int writing;
	int to_stdout;   /* created with "-" or a device, FIFO or socket (ofile.h):
	                  * an in-memory file whose image goes to out_fd at commit */
	int out_fd;      /* 1 for stdout, else the stream's descriptor */
	char *path;      /* final path of a created real file */
	char *tmp;       /* its temporary name */
	struct ss_h5_buf *buf; /* the file's bytes, when held in memory */
	img_udata img_ud;      /* for HDF5's file-image callbacks, lives with fid */
	int map_failed;
};

/* The stdin image (HDF5 reads it in place: opened without a copy) or the
 * file mapped for borrowed views (h5_view_f32).  Reference counted: the
 * handle holds one reference, every h5_take_buffers() another. */
struct ss_h5_buf {
	int refs;
	void *image;
	size_t image_len;
	int image_mapped; /* stdin was a regular file, mapped rather than read */
	void *map;
	size_t map_len;
};

/* Seen through "FILE:PATH: what (HDF5: detail)"; returns -1. */
int h5i_fail(ss_err *e, const ss_h5 *f, const char *path, const char *what);
/* HDF5's innermost message (the system's words for a failed system call);
 * clears HDF5's error stack. */
const char *h5i_msg(void);
/* Close an open id of any kind used here; -1 (not opened) is ignored. */
void h5i_close_id(hid_t id);
/* The bytes of a file opened for reading (stdin image or a private map),
 * NULL when unavailable; for borrowed views. */
const unsigned char *h5i_file_bytes(ss_h5 *f, size_t *len);
/* Memory type to read strings stored as ft (variable length or ft's width). */
hid_t h5i_str_memtype(hid_t ft, int var);
/* A variable-length UTF-8 string type (to write), or -1. */
hid_t h5i_vlen_utf8(void);

#endif

/*
 * needs.h - dropping a need (a DT_NEEDED entry) from a loaded copy of a
 * device image.
 *
 * clang 19 links the device image of a shared library against that library
 * itself: the image names it among its needs, though it takes no symbol
 * from it. The host process has the library loaded, so its own loader is
 * content; a worker rank has it only when the program linked it, not when
 * the program dlopen()ed it, and there the loader refuses the image. The
 * worker then drops that need from its copy of the image and loads it
 * again (image.c); a symbol the image did take from there is reported
 * missing by the loader, which binds every symbol at load (RTLD_NOW).
 */
#ifndef OTM_DEVICE_NEEDS_H
#define OTM_DEVICE_NEEDS_H

#include <stddef.h>

/* The library named in the loader's message `why` as one it cannot open
 * ("libx.so: cannot open shared object file: ..."), copied into `lib`
 * (room for `len` bytes); 0 when the message says something else or the
 * name does not fit. */
int otd_needs_missing(const char *why, char *lib, size_t len);

/* Removes every DT_NEEDED entry naming `lib` from the dynamic segment of
 * the copy of `image` (`size` bytes, already passed otd_image_check) held
 * in the file `fd`, the entries after them moving up. The names are read
 * from `image` (the copy's are the same bytes); the dynamic segment from
 * and to `fd`, so that earlier drops stay. 1 when an entry was removed, 0
 * when the copy names no such need, -1 when the file cannot be read or
 * written, or the image's dynamic segment or string table is malformed. */
int otd_needs_drop(const void *image, size_t size, int fd, const char *lib);

#endif

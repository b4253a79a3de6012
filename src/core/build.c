/* build.c - the running executable's build-id (build.h). */
#include "core/build.h"

#include <elf.h>
#include <link.h>
#include <string.h>

typedef struct found {
    int64_t id;
} found;

/* The notes of a PT_NOTE segment: namesz, descsz, type, then the name and the descriptor,
 * each padded to 4 bytes. */
static int64_t note_build_id(const unsigned char *p, size_t n)
{
    size_t at = 0;
    while (at + sizeof(ElfW(Nhdr)) <= n) {
        const ElfW(Nhdr) *h = (const ElfW(Nhdr) *)(p + at);
        size_t name_at = at + sizeof *h, desc_at = name_at + ((h->n_namesz + 3u) & ~3u);
        size_t next = desc_at + ((h->n_descsz + 3u) & ~3u);
        if (next > n || desc_at > n)
            break;
        if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 && !memcmp(p + name_at, "GNU", 4) && h->n_descsz) {
            uint64_t x = 1469598103934665603ULL;
            for (size_t i = 0; i < h->n_descsz; i++)
                x = (x ^ p[desc_at + i]) * 1099511628211ULL;
            return (int64_t)(x >> 1) | 1; /* never 0 */
        }
        at = next;
    }
    return 0;
}

static int each_object(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size;
    found *f = ctx;
    /* the first object is the executable itself */
    for (int i = 0; i < info->dlpi_phnum && !f->id; i++)
        if (info->dlpi_phdr[i].p_type == PT_NOTE)
            f->id = note_build_id((const unsigned char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr),
                                  info->dlpi_phdr[i].p_memsz);
    return 1;
}

int64_t fl_build_id(void)
{
    static int64_t id = -1;
    int64_t v = __atomic_load_n(&id, __ATOMIC_ACQUIRE);
    if (v >= 0)
        return v;
    found f = {0};
    dl_iterate_phdr(each_object, &f);
    __atomic_store_n(&id, f.id, __ATOMIC_RELEASE);
    return f.id;
}

/* relink.c -- points libpython's own calls of one of its functions at
 * another function (see relink.h). */
#define _GNU_SOURCE 1 /* dladdr, dl_iterate_phdr; spelled as pyconfig.h of 3.9 and 3.10 defines it again */
#include "relink.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <Python.h>

typedef struct search {
    ElfW(Addr) base; /* libpython's load address */
    const char *symbol;
    void *replacement;
    void *original;
    size_t slots;
    int failed;
} search;

/* glibc keeps the dynamic section's addresses relocated; other loaders
 * leave them as offsets. */
static ElfW(Addr) absolute(ElfW(Addr) base, ElfW(Addr) value) { return value < base ? base + value : value; }

static int writable(void *slot)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)slot & ~(uintptr_t)(page - 1);
    return mprotect((void *)start, (size_t)page, PROT_READ | PROT_WRITE);
}

/* Rewrites the slots of the relocations [rela, rela + size) that bind symbol. */
static void rewrite(search *s, const ElfW(Rela) * rela, size_t size, const ElfW(Sym) * symtab, const char *strtab)
{
    for (size_t i = 0; i < size / sizeof *rela; i++) {
        unsigned long type = ELF64_R_TYPE(rela[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
        if (strcmp(strtab + symtab[ELF64_R_SYM(rela[i].r_info)].st_name, s->symbol) != 0) continue;
        void **slot = (void **)(s->base + rela[i].r_offset);
        if (writable(slot) < 0) {
            s->failed = 1;
            return;
        }
        if (!s->original) s->original = *slot;
        *slot = s->replacement;
        s->slots++;
    }
}

static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    search *s = data;
    if (info->dlpi_addr != s->base) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
        const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)(s->base + info->dlpi_phdr[i].p_vaddr);
        const ElfW(Sym) *symtab = NULL;
        const char *strtab = NULL;
        const ElfW(Rela) *jmprel = NULL, *rela = NULL;
        size_t jmprel_size = 0, rela_size = 0;
        for (; dyn->d_tag != DT_NULL; dyn++) {
            ElfW(Addr) v = dyn->d_un.d_ptr;
            switch (dyn->d_tag) {
            case DT_SYMTAB:
                symtab = (const ElfW(Sym) *)absolute(s->base, v);
                break;
            case DT_STRTAB:
                strtab = (const char *)absolute(s->base, v);
                break;
            case DT_JMPREL:
                jmprel = (const ElfW(Rela) *)absolute(s->base, v);
                break;
            case DT_PLTRELSZ:
                jmprel_size = dyn->d_un.d_val;
                break;
            case DT_RELA:
                rela = (const ElfW(Rela) *)absolute(s->base, v);
                break;
            case DT_RELASZ:
                rela_size = dyn->d_un.d_val;
                break;
            }
        }
        if (!symtab || !strtab) return 1;
        if (jmprel) rewrite(s, jmprel, jmprel_size, symtab, strtab);
        if (rela) rewrite(s, rela, rela_size, symtab, strtab);
        return 1;
    }
    return 1;
}

int tt_relink(const char *symbol, void *replacement, void **original)
{
#if defined(__x86_64__) && defined(__linux__)
    Dl_info where;
    if (!dladdr((void *)Py_IsInitialized, &where) || !where.dli_fbase) return -1;
    search s = {.base = (ElfW(Addr))where.dli_fbase, .symbol = symbol, .replacement = replacement};
    dl_iterate_phdr(visit, &s);
    if (s.failed || !s.slots) return -1;
    if (original) *original = s.original;
    return 0;
#else
    (void)symbol, (void)replacement, (void)original;
    return -1;
#endif
}

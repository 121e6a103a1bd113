/* omp_usm: a program that requires unified shared memory. Its regions
 * reach rank 0's memory through host pointers alone, nothing mapped:
 * heap, stack and global data, a linked list of separate allocations
 * walked and changed, 4 MiB touched page by page; the host's writes
 * after a region are seen by the next one, and two devices write
 * different pages of one array, then alternate bytes of one page, at
 * once (what each wrote, and only that, comes back).
 *
 * The launcher reads the requirement from the program's file and starts
 * the ranks with layouts of their own (omptarget-mpi-layout): rank 0's
 * pages are placed at their own addresses on the device ranks.
 */
#define OMP_TEST_NAME "omp_usm"
#include "omp_check.h"

#pragma omp requires unified_shared_memory

#define BIG (4u << 20)

typedef struct node {
    struct node *next;
    long value;
} node;

int global_array[1000];

static node *make_list(int n)
{
    node *head = NULL;
    for (int i = n; i > 0; i--) {
        node *e = malloc(sizeof *e);
        CHECK(e, "no memory for the list");
        *e = (node){head, i};
        head = e;
    }
    return head;
}

/* A region sums the list and doubles every value on the way. */
static long walk_and_double(node *head, int dev)
{
    long sum = 0;
#pragma omp target device(dev) map(tofrom : sum)
    for (node *e = head; e; e = e->next) {
        sum += e->value;
        e->value *= 2;
    }
    return sum;
}

static void heap_stack_global(int dev)
{
    int *heap = malloc(100 * sizeof *heap);
    int on_stack[64];
    CHECK(heap, "no memory");
    for (int i = 0; i < 100; i++)
        heap[i] = i;
    for (int i = 0; i < 64; i++)
        on_stack[i] = 3 * i;
    for (int i = 0; i < 1000; i++)
        global_array[i] = -i;
    int *sp = on_stack;
#pragma omp target device(dev)
    {
        for (int i = 0; i < 100; i++)
            heap[i] += 1000;
        for (int i = 0; i < 64; i++)
            sp[i] += 1;
        for (int i = 0; i < 1000; i++)
            global_array[i] *= 2;
    }
    for (int i = 0; i < 100; i++)
        CHECK(heap[i] == i + 1000, "heap[%d] = %d", i, heap[i]);
    for (int i = 0; i < 64; i++)
        CHECK(on_stack[i] == 3 * i + 1, "stack[%d] = %d", i, on_stack[i]);
    for (int i = 0; i < 1000; i++)
        CHECK(global_array[i] == -2 * i, "global_array[%d] = %d", i, global_array[i]);

    /* The host writes between regions: the next region reads them. */
    heap[7] = 77;
    int seen = 0;
#pragma omp target device(dev) map(tofrom : seen)
    seen = heap[7];
    CHECK(seen == 77, "the second region read %d, the host wrote 77", seen);
    free(heap);
}

static void big_array(int dev)
{
    unsigned char *a = malloc(BIG);
    CHECK(a, "no memory");
    for (unsigned i = 0; i < BIG; i++)
        a[i] = (unsigned char)i;
    unsigned long sum = 0;
#pragma omp target device(dev) map(tofrom : sum)
    for (unsigned i = 0; i < BIG; i += 4096) {
        sum += a[i];
        a[i + 1] = 0xee;
    }
    unsigned long want = 0;
    for (unsigned i = 0; i < BIG; i += 4096)
        want += (unsigned char)i;
    CHECK(sum == want, "sum %lu, expected %lu", sum, want);
    for (unsigned i = 0; i < BIG; i++)
        CHECK(a[i] == (i % 4096 == 1 ? 0xee : (unsigned char)i), "a[%u] = %u", i, a[i]);
    free(a);
}

/* Two devices at once: the halves of an array (different pages), then
 * the even and odd bytes of one page. */
static void two_devices(void)
{
    enum { N = 1 << 16 };
    int *a = malloc(N * sizeof *a);
    char *page = aligned_alloc(4096, 4096);
    CHECK(a && page, "no memory");
    for (int i = 0; i < N; i++)
        a[i] = i;
    memset(page, 'x', 4096);
    for (int dev = 0; dev < 2; dev++) {
#pragma omp target device(dev) nowait
        {
            for (int i = dev * N / 2; i < (dev + 1) * N / 2; i++)
                a[i] = 10 * a[i] + dev;
            for (int i = dev; i < 4096; i += 2)
                page[i] = (char)('a' + dev);
        }
    }
#pragma omp taskwait
    for (int i = 0; i < N; i++)
        CHECK(a[i] == 10 * i + (i >= N / 2), "a[%d] = %d", i, a[i]);
    for (int i = 0; i < 4096; i++)
        CHECK(page[i] == 'a' + i % 2, "page[%d] = '%c'", i, page[i]);
    free(a);
    free(page);
}

int main(void)
{
    int ndev = require_devices(2);
    heap_stack_global(0);
    heap_stack_global(1);

    node *list = make_list(1000);
    long sum = walk_and_double(list, 1);
    CHECK(sum == 1000L * 1001 / 2, "list sum %ld", sum);
    long i = 1;
    for (node *e = list; e; e = e->next, i++)
        CHECK(e->value == 2 * i, "node %ld holds %ld", i, e->value);
    sum = walk_and_double(list, 0);
    CHECK(sum == 1000L * 1001, "list sum after doubling %ld", sum);
    while (list) {
        node *next = list->next;
        free(list);
        list = next;
    }

    big_array(0);
    two_devices();
    PASS("%d devices: heap, stack, globals, a 1000-node list, 4 MiB page by page, "
         "host writes between regions, two devices on one array and one page", ndev);
    return 0;
}

/*
 * print_settings_table.c - prints otm_settings_table() as the README's
 * markdown table, or with --names every variable name and alias, one a line
 * (what check_readme.sh looks for in the README).
 */
#include <stdio.h>
#include <string.h>

#include "otm/settings.h"

/* Markdown cells end at '|', so one inside a cell is escaped. */
static void cell(const char *text, int code)
{
    fputs(code ? " `" : " ", stdout);
    for (const char *p = text; *p; p++) {
        if (*p == '|')
            fputc('\\', stdout);
        fputc(*p, stdout);
    }
    fputs(code ? "` |" : " |", stdout);
}

static void print_table(void)
{
    puts("| Variable | Alias | Default | Range | Ranks | Meaning |");
    puts("|---|---|---|---|---|---|");
    for (const otm_setting_doc *d = otm_settings_table(); d->name; d++) {
        /* The same text an error message ends in. */
        char range[OTM_SETTING_RANGE_LEN];
        otm_setting_range(d, range, sizeof range);
        fputs("|", stdout);
        cell(d->name, 1);
        if (d->alias)
            cell(d->alias, 1);
        else
            cell("", 0);
        cell(d->def, 1);
        cell(range, 0);
        cell(otm_setting_scope_text(d->scope), 0);
        cell(d->meaning, 0);
        fputc('\n', stdout);
    }
}

static void print_names(void)
{
    for (const otm_setting_doc *d = otm_settings_table(); d->name; d++) {
        puts(d->name);
        if (d->alias)
            puts(d->alias);
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--names") == 0)
        print_names();
    else if (argc == 1)
        print_table();
    else {
        fprintf(stderr, "usage: %s [--names]\n", argv[0]);
        return 2;
    }
    return ferror(stdout) ? 1 : 0;
}

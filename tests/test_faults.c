/* placeholder: replaced by the real test */
int main(void) { return 1; }

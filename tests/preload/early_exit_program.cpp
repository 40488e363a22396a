// Never reaches main: early_exit_library's constructor ends the process first.
int main() { return 0; }

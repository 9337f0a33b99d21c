setup() {
  mkdir -p path/to
  printf 'id,name\n1,a\n2,b\n3,c\n4,d\n' > path/to/my_file.csv
}

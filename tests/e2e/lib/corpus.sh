# Sourced by end-to-end tests: writes a small synthetic corpus in the tagged
# format of the Brown corpus (cats.txt + one file per text), so the tests
# need no network. Deterministic: a fixed LCG, not awk's rand().
#   make_tagged_corpus DIR FILES_PER_GENRE
make_tagged_corpus() {
    mkdir -p "$1"
    awk -v dir="$1" -v per="$2" 'BEGIN {
        split("news fiction lore", genre, " ")
        split("the/at a/at dog/nn cat/nn man/nn house/nn ran/vbd saw/vbd quickly/rb old/jj " \
              "red/jj small/jj river/nn city/nn walked/vbd found/vbd near/in over/in and/cc",
              word, " ")
        nw = 19; x = 12345
        letters = "abcdefghijklmnopqr"
        for (g = 1; g <= 3; g++)
            for (f = 1; f <= per; f++) {
                name = sprintf("c%s%02d", substr(letters, g, 1), f)
                print name " " genre[g] > (dir "/cats.txt")
                out = dir "/" name
                for (p = 0; p < 12; p++) {
                    printf "\n\n\t" > out
                    for (s = 0; s < 3; s++) {
                        n = 6 + (x % 7)
                        for (w = 0; w < n; w++) {
                            x = (x * 1103515245 + 12345) % 2147483648
                            printf "%s ", word[1 + int(x / 65536) % nw] > out
                        }
                        printf "./.\n" > out
                    }
                }
                close(out)
            }
    }'
}

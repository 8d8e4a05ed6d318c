package Tent::Promlint;

# A checker of Prometheus' text exposition format and of the naming rules
# "promtool check metrics" applies (client_golang's promlint), for where
# Debian's prometheus package (96 MB, promtool in it) is not installed:
#
#   my @problems = Tent::Promlint::lint($text);   # () when clean
#
# Format: "# HELP name text" and "# TYPE name type" at most once a family
# and before its samples; samples "name{label="value",...} value"; a
# family's samples together; no series twice.  Names: the metric name and
# label name grammar; snake_case, no colon (recording rules' own); a
# counter ends in _total, nothing else does; no _count, _sum, _bucket
# but a summary's or histogram's; no type in the name; base units only
# (seconds, bytes: no milliseconds, no "ms", no kilobytes).  Each problem
# is "name: what", as promtool words it where it has the rule.

use strict;
use warnings;

our @NON_BASE = qw(milliseconds microseconds nanoseconds minutes hours days
                   weeks months years kilobytes megabytes gigabytes
                   terabytes petabytes kibibytes mebibytes gibibytes
                   tebibytes bits kilobits megabits gigabits percent
                   celsius fahrenheit grams kilograms meter);
our @ABBREVIATIONS = qw(s ms us ns sec secs min mins h hr hrs b kb mb gb tb
                        pb kib mib gib tib);
our %BASE = (milliseconds => 'seconds', microseconds => 'seconds',
             nanoseconds => 'seconds', minutes => 'seconds',
             hours => 'seconds', days => 'seconds', weeks => 'seconds',
             months => 'seconds', years => 'seconds',
             percent => 'ratio', celsius => 'celsius',
             bits => 'bytes');

my $NAME = qr/[a-zA-Z_:][a-zA-Z0-9_:]*/;
my $LABEL = qr/[a-zA-Z_][a-zA-Z0-9_]*/;
my $VALUE = qr/[-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|NaN|Inf)/;

sub family_of {
    my ($name, $types) = @_;
    return $name if $types->{$name};
    for my $suffix (qw(_bucket _count _sum _created)) {
        (my $base = $name) =~ s/\Q$suffix\E\z// or next;
        my $t = $types->{$base} // '';
        return $base if $t eq 'histogram' || $t eq 'summary';
    }
    return $name;
}

sub lint {
    my ($text) = @_;
    my (@p, %help, %type, %sampled, %series, %done, $current);

    for my $line (split /\n/, $text) {
        next if $line eq '';
        if ($line =~ /\A# (HELP|TYPE) ($NAME)(?: (.*))?\z/) {
            my ($what, $name, $rest) = ($1, $2, $3 // '');
            my $seen = $what eq 'HELP' ? \%help : \%type;
            push @p, "$name: a second # $what" if exists $seen->{$name};
            push @p, "$name: # $what after its samples" if $sampled{$name};
            if ($what eq 'TYPE') {
                push @p, "$name: unknown type \"$rest\""
                    unless $rest =~ /\A(?:counter|gauge|histogram|summary|untyped)\z/;
            }
            $seen->{$name} = $rest;
            next;
        }
        next if $line =~ /\A#/;
        my ($name, $labels, $value) =
            $line =~ /\A($NAME)(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+-?[0-9]+)?\z/
            or do { push @p, "not a sample: $line"; next };
        push @p, "$name: value \"$value\" is not a number"
            unless $value =~ /\A$VALUE\z/;
        my @pairs;
        my $l = $labels // '';
        while (length $l) {
            $l =~ s/\A($LABEL)="((?:[^"\\\n]|\\[\\"n])*)"(?:,|\z)// or do {
                push @p, "$name: bad labels {$labels}";
                last;
            };
            push @pairs, "$1=$2";
        }
        my $family = family_of($name, \%type);
        if (defined $current && $current ne $family && $done{$family}) {
            push @p, "$family: its samples are not together";
        }
        $done{$current} = 1 if defined $current && $current ne $family;
        $current = $family;
        $sampled{$family} = 1;
        my $key = join ',', $name, sort @pairs;
        push @p, "$name: series {" . join(',', sort @pairs) . "} twice"
            if $series{$key}++;
        push @p, "$name: label names should be snake_case"
            if grep { /[A-Z]/ } map { (split /=/)[0] } @pairs;
    }

    for my $name (sort keys %sampled) {
        my $t = $type{$name} // 'untyped';
        push @p, "$name: no help text" unless length($help{$name} // '');
        push @p, "$name: no # TYPE" unless exists $type{$name};
        push @p, "$name: counter metrics should have \"_total\" suffix"
            if $t eq 'counter' && $name !~ /_total\z/;
        push @p, "$name: non-counter metrics should not have \"_total\" suffix"
            if $t ne 'counter' && $name =~ /_total\z/;
        push @p, "$name: metric names should be written in 'snake_case' not 'camelCase'"
            if $name =~ /[A-Z]/;
        push @p, "$name: metric names should not contain ':'"
            if $name =~ /:/;
        for my $s (qw(count sum bucket)) {
            push @p, "$name: non-histogram and non-summary metrics should not have \"_$s\" suffix"
                if $name =~ /_\Q$s\E\z/ && $t !~ /\A(?:histogram|summary)\z/;
        }
        my @words = split /_/, $name;
        for my $type (qw(counter gauge histogram summary untyped)) {
            push @p, "$name: metric name should not include type '$type'"
                if grep { $_ eq $type } @words;
        }
        for my $unit (@NON_BASE) {
            next unless grep { $_ eq $unit } @words;
            my $base = $BASE{$unit} // 'the base unit';
            push @p, "$name: use base unit \"$base\" instead of \"$unit\"";
        }
        for my $abbr (@ABBREVIATIONS) {
            push @p, "$name: metric names should not contain abbreviated units"
                if grep { $_ eq $abbr } @words[1 .. $#words];
        }
    }
    for my $name (sort keys %type) {
        push @p, "$name: # TYPE with no sample" unless $sampled{$name};
    }

    return @p;
}

1;

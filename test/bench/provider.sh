# Source me.  The model prompt.sh's scenario (and prompt_compare.sh's) is
# defined against, by the provider whose wire format the request takes:
#
#   PROVIDER=openai|gemini|anthropic (default openai)
#
# sets BENCH_MODEL_PATH (appended to the model server's URL) and
# BENCH_MODEL_ID; the local model server speaks all three formats, and the
# scenario's after_model plugin answers with an ADK content, so only the
# request differs.  The psql variables the scenario's SQL reads:
#   psql -v provider="$PROVIDER" -v model_path="$BENCH_MODEL_PATH" -v model_id="$BENCH_MODEL_ID"
PROVIDER=${PROVIDER:-openai}
case $PROVIDER in
    openai) BENCH_MODEL_PATH=/v1; BENCH_MODEL_ID=gpt-test ;;
    gemini) BENCH_MODEL_PATH=; BENCH_MODEL_ID=gemini-test ;;
    anthropic) BENCH_MODEL_PATH=; BENCH_MODEL_ID=claude-test ;;
    *) echo "PROVIDER must be openai, gemini or anthropic, not \"$PROVIDER\"" >&2; exit 2 ;;
esac

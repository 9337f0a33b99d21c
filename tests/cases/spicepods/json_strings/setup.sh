# The recipe's CSV: t-shirts with their attributes as JSON strings.
setup() {
  cat > tshirts.csv <<'CSV'
id,name,price,attributes
1,Classic Tee,19.99,"{""color"": ""red"", ""sizes"": [""S"", ""M"", ""L""]}"
2,V-Neck,24.50,"{""color"": ""blue"", ""sizes"": [""M""], ""fit"": ""slim""}"
3,Raglan,29.00,"{""color"": ""grey"", ""sizes"": []}"
4,"Pocket Tee, organic",21.75,"{""color"": ""green"", ""sizes"": [""XS"", ""S""]}"
CSV
}

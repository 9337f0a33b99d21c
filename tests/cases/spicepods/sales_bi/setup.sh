# The recipe's cleaned_sales_data.parquet (the Kaggle sample's columns), one file.
setup() {
  write_parquet cleaned_sales_data.parquet "
    SELECT 10100 + i AS order_number, 20 + i % 30 AS quantity_ordered,
           round(30 + (i % 70) * 1.01, 2) AS price_each, i % 10 + 1 AS order_line_number,
           round((20 + i % 30) * (30 + (i % 70) * 1.01), 2) AS sales,
           DATE '2003-01-06' + to_days((i * 3)::INTEGER) AS order_date,
           CASE i % 4 WHEN 0 THEN 'Shipped' WHEN 1 THEN 'Shipped' WHEN 2 THEN 'Resolved' ELSE 'On Hold' END AS status,
           ['Motorcycles', 'Classic Cars', 'Trucks and Buses', 'Vintage Cars'][i % 4 + 1] AS product_line,
           'Customer ' || (i % 17) AS customer_name, ['USA', 'France', 'Norway', 'Japan'][i % 4 + 1] AS country,
           ['Small', 'Medium', 'Large'][i % 3 + 1] AS deal_size
    FROM range(0, 600) t(i)"
  s3pub_put spiceai-demo-datasets cleaned_sales_data.parquet cleaned_sales_data.parquet
}
